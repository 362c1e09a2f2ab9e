// The operator's admin API: projects, their limits and their API keys (handlers.ts,
// store.ts). Guarded by ADMIN_TOKEN in http/app.ts, so it holds no state of its own; the
// limits it sets are read where they apply (credits/account.ts, sessions' creation); browser
// caps only where this server can enforce them (config.browserCaps).
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { adminHandlers, type AdminOperation } from './handlers.js';

export function admin(d: { db: Db; blobs: BlobAreas; config: Pick<ServiceConfig, 'browserCaps'> }): Capability<AdminOperation> {
  return { name: 'admin', handlers: adminHandlers(d) };
}

// The console's API keys page manages the signed-in project's keys with these.
export { createKey, listKeys, revokeKey, type KeyRow } from './store.js';
