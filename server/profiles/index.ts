// Profiles: a browser's state kept past its session (cookies, storage, caches: the
// user-data directory), made from a running session and saved when it ends, and loaded by
// the sessions that name it in `browser.profile` (keeper.ts); the Profiles operations
// (handlers.ts); what is kept and how it is packed (snapshot.ts).
import { join } from 'node:path';
import type { Logger } from 'pino';
import { browsersDirFor } from '../browser/index.js';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { SessionManager } from '../sessions/index.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { profileHandlers, type ProfileOperation } from './handlers.js';
import { ProfileKeeper } from './keeper.js';
import { UnpackedProfiles } from './unpacked.js';

export function profiles(d: { db: Db; blobs: BlobAreas; config: ServiceConfig; log: Logger; sessions: SessionManager }): Capability<ProfileOperation> {
  const storage = d.blobs('profiles');
  const unpacked = new UnpackedProfiles(join(d.config.dataDir, 'profile-cache'));
  const keeper = new ProfileKeeper({
    db: d.db,
    log: d.log,
    storage,
    unpacked,
    browsersDir: browsersDirFor(d.config.dataDir),
    nodeId: d.sessions.nodeId,
  });
  return {
    name: 'profiles',
    handlers: profileHandlers({ db: d.db, storage, sessions: d.sessions, unpacked, hasServiceProxies: d.config.serviceProxyPool !== undefined }),
    sessionHooks: keeper,
    start: () => keeper.start(),
    // A cache: nothing of it outlives the server.
    close: () => unpacked.reset(),
  };
}
