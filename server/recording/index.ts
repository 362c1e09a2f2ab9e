// Recordings: the recorder (recorder.ts, following every session through the screencast),
// the file-system storage under DATA_DIR/recordings, the contract's Recordings operations
// and the signed-link route (handlers.ts).
import type { Logger } from 'pino';
import type { Capability, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import type { Screencasts } from '../liveview/index.js';
import type { SessionLookup } from '../sessions/index.js';
import { Recorder } from './recorder.js';
import type { BlobAreas } from '../storage/blobs.js';
import { RecordingLinks, recordingHandlers, recordingLinkRoute, type RecordingHandlers } from './handlers.js';
import { findRecording } from './store.js';

/** Signed links to stored recordings, for what reports on a session (task events). */
export interface RecordingLinkService {
  /** The signed file link of the session's primary recording, once it is stored; undefined before (or without one). */
  primaryLink(projectId: string, sessionId: string): Promise<string | undefined>;
}

export type { RecordingHandlers } from './handlers.js';

export function recordings(d: {
  db: Db;
  /** Derives the key of recordings' links. */
  secrets: Secrets;
  blobs: BlobAreas;
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup;
  screencasts: Screencasts;
  /** Told: session.recording.ready written. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}): Capability<keyof RecordingHandlers, { recordingHandlers: RecordingHandlers; recordingLinks: RecordingLinkService }> {
  const storage = d.blobs('recordings');
  const recorder = new Recorder({
    db: d.db,
    log: d.log,
    screencasts: d.screencasts,
    storage,
    dataDir: d.config.dataDir,
    ffmpegPath: d.config.ffmpegPath,
    fps: d.config.recordingFps,
    publicUrl: d.config.publicUrl,
    signals: d.signals,
  });
  const links = new RecordingLinks(d.secrets, d.config.publicUrl);
  const deps = { db: d.db, sessions: d.sessions, recorder, storage, publicUrl: d.config.publicUrl };
  const handlers = recordingHandlers(deps, links);
  return {
    name: 'recordings',
    handlers,
    // GET /files/recordings/{id}.mp4, the signed file_link.
    routes: (app) => recordingLinkRoute(app, deps, links),
    sessionHooks: recorder,
    provides: {
      // The same handlers for the MCP server's recording resource: links as the API gives them.
      recordingHandlers: handlers,
      recordingLinks: {
        async primaryLink(projectId, sessionId) {
          const row = await findRecording(d.db, projectId, sessionId, 'primary');
          return row ? links.url(row.id) : undefined;
        },
      },
    },
    // Encodes what a killed predecessor left (in the background).
    start: () => recorder.start(),
    // After the sessions' end, so their encodes finish first.
    close: () => recorder.close(),
  };
}
