// The Profiles operations of the contract: make a profile from a running session (saved
// when that session ends, by keeper.ts), list, get and delete, each within the project and
// addressed by name.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { SessionLookup } from '../sessions/index.js';
import type { BlobStorage } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';
import type { UnpackedProfiles } from './unpacked.js';

export type ProfileOperation = 'createProfile' | 'listProfiles' | 'getProfile' | 'deleteProfile';

const NOT_FOUND = 'Profile not found';

export function resource(row: store.ProfileRow): components['schemas']['Profile'] {
  return {
    name: row.name,
    description: row.description,
    status: row.status,
    source: row.session_id === null ? null : 'session',
    session_id: row.session_id,
    dedicated_sticky_ip: row.dedicated_sticky_ip,
    size_bytes: row.size_bytes,
    failure_reason: row.failure_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function profileHandlers(d: {
  db: Db;
  storage: BlobStorage;
  sessions: SessionLookup;
  unpacked: UnpackedProfiles;
  hasServiceProxies: boolean;
}): Pick<AppHandlers, ProfileOperation> {
  return {
    async createProfile(req, ctx) {
      const body = req.body;
      // A sticky IP is one of the service proxy pool's; without a pool it could do nothing.
      if (body.dedicated_sticky_ip && !d.hasServiceProxies) {
        return fail(400, 'dedicated_sticky_ip: this server has no service proxy pool to keep an IP from (the operator sets SERVICE_PROXY_POOL)');
      }
      // The contract requires session_id with source `session`; without either, the vendor's
      // source is left out: an empty profile, for sessions that persist into it.
      const sessionId = body.session_id;
      if (sessionId === undefined) {
        const empty = await store.insertEmpty(d.db, {
          id: randomUUID(),
          projectId: ctx.projectId,
          name: body.name,
          description: body.description,
          dedicatedStickyIp: body.dedicated_sticky_ip ?? false,
        });
        if (!empty) return fail(409, `A profile named ${body.name} already exists`);
        return { status: 200, body: { data: { status: empty.status } } };
      }
      const found = await d.sessions.lookup(ctx.projectId, sessionId);
      if ('status' in found) return fail(404, found.status === 404 ? 'Session not found' : 'Session is not running');
      const row = await store.insertPending(d.db, {
        id: randomUUID(),
        projectId: ctx.projectId,
        name: body.name,
        description: body.description,
        sessionId,
        dedicatedStickyIp: body.dedicated_sticky_ip ?? false,
        stickyProxyId: found.serviceProxyId,
      });
      if (!row) return fail(409, `A profile named ${body.name} already exists`);
      // The session may have begun to end between the lookup and the insert; its end looks
      // for pending profiles only after it stops being running, so one of the two sees the
      // other: here, the profile would never be saved.
      if (!d.sessions.get(sessionId)) {
        await store.deleteProfile(d.db, ctx.projectId, body.name);
        return fail(404, 'Session is not running');
      }
      return { status: 200, body: { data: { status: row.status } } };
    },

    async listProfiles(req, ctx) {
      const { count, items } = await store.listProfiles(d.db, ctx.projectId, req.query.page ?? 1, req.query.limit ?? 100);
      return { status: 200, body: { data: { count, items: items.map(resource) } } };
    },

    async getProfile(req, ctx) {
      const row = await store.getProfile(d.db, ctx.projectId, req.params.name);
      return row ? { status: 200, body: { data: resource(row) } } : fail(404, NOT_FOUND);
    },

    async deleteProfile(req, ctx) {
      const row = await store.deleteProfile(d.db, ctx.projectId, req.params.name);
      if (!row) return fail(404, NOT_FOUND);
      // Sessions that started with it hold their own copies; a save still to come finds
      // the row gone and removes what it wrote.
      if (row.storage_key) {
        d.unpacked.forget(row.storage_key);
        await d.storage.delete(row.storage_key);
      }
      return { status: 200, body: { data: { status: 'deleted' } } };
    },
  };
}
