// The admin API's operations (/admin/v1, tag Admin): projects with their limits, and their
// API keys. The admin token is checked before any of these runs (http/app.ts).
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { ServiceConfig } from '../config/config.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';

export type AdminOperation =
  | 'adminCreateProject'
  | 'adminListProjects'
  | 'adminGetProject'
  | 'adminUpdateProject'
  | 'adminDeleteProject'
  | 'adminCreateKey'
  | 'adminListKeys'
  | 'adminRevokeKey';

const NO_PROJECT = 'Project not found';

const project = (r: store.ProjectRow): components['schemas']['AdminProject'] => ({
  id: r.id,
  name: r.name,
  tier: r.tier,
  included_credits: r.included_credits,
  cost_limit: r.cost_limit,
  max_concurrent_browsers: r.max_concurrent_browsers,
  browser_memory_limit_mb: r.browser_memory_limit_mb,
  browser_cpu_limit: r.browser_cpu_limit,
  gift_credits: r.gift_credits,
  created_at: r.created_at.toISOString(),
});

const key = (r: store.KeyRow): components['schemas']['AdminKey'] => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  source: r.source,
  created_at: r.created_at.toISOString(),
  last_used_at: r.last_used_at?.toISOString() ?? null,
  revoked_at: r.revoked_at?.toISOString() ?? null,
});

/** Browser caps asked of a server that cannot enforce them (no control groups): refused, never kept inert. */
function uncappable(b: { browser_memory_limit_mb?: number | null; browser_cpu_limit?: number | null }, canCap: boolean): string | undefined {
  if (canCap || (!b.browser_memory_limit_mb && !b.browser_cpu_limit)) return undefined;
  return 'This server cannot cap browsers (it cannot make control groups; see /healthz browsers.limits): browser_memory_limit_mb and browser_cpu_limit can only be null or 0 here';
}

export function adminHandlers(d: { db: Db; blobs: BlobAreas; config: Pick<ServiceConfig, 'browserCaps'> }): Pick<AppHandlers, AdminOperation> {
  const { db } = d;
  const canCap = d.config.browserCaps !== undefined;
  return {
    async adminCreateProject(req, ctx) {
      const b = req.body;
      const refused = uncappable(b, canCap);
      if (refused) return fail(409, refused);
      const row = await store.insertProject(db, {
        name: b.name,
        tier: b.tier ?? 'self-hosted',
        included_credits: b.included_credits ?? null,
        cost_limit: b.cost_limit ?? null,
        max_concurrent_browsers: b.max_concurrent_browsers ?? null,
        browser_memory_limit_mb: b.browser_memory_limit_mb ?? null,
        browser_cpu_limit: b.browser_cpu_limit ?? null,
      });
      ctx.log.info({ projectId: row.id }, 'admin: project created');
      return { status: 201, body: { data: project(row) } };
    },

    async adminListProjects() {
      return { status: 200, body: { data: (await store.listProjects(db)).map(project) } };
    },

    async adminGetProject(req) {
      const row = await store.getProject(db, req.params.project_id);
      return row ? { status: 200, body: { data: project(row) } } : fail(404, NO_PROJECT);
    },

    async adminUpdateProject(req, ctx) {
      const refused = uncappable(req.body, canCap);
      if (refused) return fail(409, refused);
      const row = await store.updateProject(db, req.params.project_id, req.body);
      if (!row) return fail(404, NO_PROJECT);
      ctx.log.info({ projectId: row.id, fields: Object.keys(req.body) }, 'admin: project updated');
      return { status: 200, body: { data: project(row) } };
    },

    async adminDeleteProject(req, ctx) {
      const outcome = await store.deleteProject(db, req.params.project_id);
      if (!outcome.deleted) return outcome.reason === 'not_found' ? fail(404, NO_PROJECT) : fail(409, outcome.message);
      // The rows are gone; their files follow. One that cannot be removed is logged, not
      // fatal: nothing names it any more.
      for (const f of outcome.files) {
        await d
          .blobs(f.area)
          .delete(f.key)
          .catch((err: Error) => ctx.log.warn({ area: f.area, key: f.key, err: err.message }, 'admin: a deleted project left a stored file'));
      }
      ctx.log.info({ projectId: req.params.project_id, files: outcome.files.length }, 'admin: project deleted');
      return { status: 200, body: { data: { status: 'deleted' } } };
    },

    async adminCreateKey(req, ctx) {
      const made = await store.createKey(db, req.params.project_id, req.body?.name ?? null);
      if (!made) return fail(404, NO_PROJECT);
      // The key itself is never logged: its id and prefix name it.
      ctx.log.info({ projectId: req.params.project_id, apiKeyId: made.row.id, prefix: made.row.prefix }, 'admin: API key created');
      const { id, name, prefix, created_at } = key(made.row);
      return { status: 201, body: { data: { id, key: made.key, name, prefix, created_at } } };
    },

    async adminListKeys(req) {
      if (!(await store.getProject(db, req.params.project_id))) return fail(404, NO_PROJECT);
      return { status: 200, body: { data: (await store.listKeys(db, req.params.project_id)).map(key) } };
    },

    async adminRevokeKey(req, ctx) {
      if (!(await store.revokeKey(db, req.params.key_id))) return fail(404, 'API key not found');
      ctx.log.info({ apiKeyId: req.params.key_id }, 'admin: API key revoked');
      return { status: 200, body: { data: { status: 'revoked' } } };
    },
  };
}
