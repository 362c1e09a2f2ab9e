// Profiles: a browser's state kept past its session (cookies, storage, caches: the
// user-data directory), made from a running session and saved when it ends, and loaded by
// the sessions that name it in `browser.profile` (keeper.ts); the Profiles operations
// (handlers.ts); what is kept and how it is packed (snapshot.ts).
import { join } from 'node:path';
import type { Logger } from 'pino';
import { browsersDirFor } from '../browser/index.js';
import type { Capability, LaunchingSession, RunningSession } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { NodeLoad, SessionLookup } from '../sessions/index.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { profileHandlers, type ProfileOperation } from './handlers.js';
import { ProfileKeeper } from './keeper.js';
import * as store from './store.js';
import { UnpackedProfiles } from './unpacked.js';

/** What later capabilities may do with profiles (identities keep their signed-in state in one). */
export interface ProfileService {
  /** Whether the project's profile `name` holds a saved state to load. */
  isReady(projectId: string, name: string): Promise<boolean>;
  /** Unpacks the ready profile `name` into a launching session's user-data (the hook then adds `userData`); false when it is not ready. */
  loadInto(s: LaunchingSession, name: string): Promise<boolean>;
  /** Saves the running session's state into profile `name` (made when missing) when the session ends. */
  keepAtEnd(s: RunningSession, name: string): Promise<void>;
  /** Deletes profile `name` and its stored state, if it exists. */
  remove(projectId: string, name: string): Promise<void>;
}

export function profiles(d: {
  db: Db;
  blobs: BlobAreas;
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup & NodeLoad;
}): Capability<ProfileOperation, { profiles: ProfileService }> {
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
  const service: ProfileService = {
    isReady: async (projectId, name) => (await store.getProfile(d.db, projectId, name))?.status === 'ready',
    loadInto: (s, name) => keeper.load(s, name),
    keepAtEnd: (s, name) => keeper.keepAtEnd(s, name),
    remove: async (projectId, name) => {
      const row = await store.deleteProfile(d.db, projectId, name);
      if (row?.storage_key) await removeStored(row.storage_key);
    },
  };
  const removeStored = async (key: string) => {
    unpacked.forget(key);
    await storage.delete(key);
  };
  return {
    name: 'profiles',
    handlers: profileHandlers({ db: d.db, storage, sessions: d.sessions, unpacked, hasServiceProxies: d.config.serviceProxyPool !== undefined }),
    sessionHooks: keeper,
    provides: { profiles: service },
    start: () => keeper.start(),
    recoverNode: (node) => keeper.recoverNode(node),
    // A cache: nothing of it outlives the server.
    close: () => unpacked.reset(),
  };
}
