// Recordings, assembled: the file-system storage under DATA_DIR/recordings, the recorder
// (a session extension), the contract's Recordings operations and the signed-link route.
import { join } from 'node:path';
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../server.js';
import type { SessionManager } from '../sessions/manager.js';
import type { Screencasts } from '../liveview/screencast.js';
import { Recorder } from './recorder.js';
import { FsRecordingStorage, type RecordingStorage } from './storage.js';
import { RecordingLinks, recordingHandlers, recordingLinkRoute, type RecordingHandlers } from './handlers.js';

export { Recorder } from './recorder.js';
export { FsRecordingStorage, type RecordingStorage } from './storage.js';

export interface Recordings {
  recorder: Recorder;
  storage: RecordingStorage;
  handlers: RecordingHandlers;
  /** Adds GET /files/recordings/{id}.mp4 (the signed file_link). */
  routes(app: Hono): void;
  /** Encodes what a killed predecessor left (in the background). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export function createRecordings(o: {
  db: Db;
  config: Pick<ServiceConfig, 'dataDir' | 'ffmpegPath' | 'recordingFps' | 'publicUrl'>;
  log: Logger;
  sessions: Pick<SessionManager, 'get'>;
  screencasts: Screencasts;
  storage?: RecordingStorage;
}): Recordings {
  const storage = o.storage ?? new FsRecordingStorage(join(o.config.dataDir, 'recordings'));
  const recorder = new Recorder({
    db: o.db,
    log: o.log,
    screencasts: o.screencasts,
    storage,
    dataDir: o.config.dataDir,
    ffmpegPath: o.config.ffmpegPath,
    fps: o.config.recordingFps,
    publicUrl: o.config.publicUrl,
  });
  const links = new RecordingLinks(o.db, o.config.publicUrl);
  const deps = { db: o.db, sessions: o.sessions, recorder, storage, publicUrl: o.config.publicUrl };
  return {
    recorder,
    storage,
    handlers: recordingHandlers(deps, links),
    routes: (app) => recordingLinkRoute(app, deps, links),
    start: () => recorder.start(),
    close: () => recorder.close(),
  };
}
