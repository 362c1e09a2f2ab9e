// Files in and out of a session: what its pages download is kept in blob storage (area
// `downloads`) and listed, fetched and deleted through the API after the browser is gone
// (downloads.ts follows every session for that); files uploaded to a running session are
// written into its browser's root for its pages' file inputs (uploads.ts).
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { SessionLookup } from '../sessions/index.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { DownloadKeeper } from './downloads.js';
import { sessionFileHandlers, type SessionFileOperation } from './handlers.js';
import { Uploads } from './uploads.js';

export function sessionFiles(d: { db: Db; blobs: BlobAreas; config: ServiceConfig; log: Logger; sessions: SessionLookup }): Capability<SessionFileOperation> {
  const storage = d.blobs('downloads');
  return {
    name: 'session-files',
    handlers: sessionFileHandlers({
      db: d.db,
      storage,
      sessions: d.sessions,
      uploads: new Uploads(d.config.sessionUploadsMaxBytes),
      publicUrl: d.config.publicUrl,
    }),
    sessionHooks: new DownloadKeeper({ db: d.db, storage, log: d.log, maxBytes: d.config.sessionDownloadsMaxBytes }),
  };
}
