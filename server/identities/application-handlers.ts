// The Applications operations: applications (a web app's login page and the hosts its
// credentials may be typed on), their authentication flows (how the server signs in), and
// the identities they hold. An application with identities is not deleted (409).
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Db } from '../store/db.js';
import { completeLogin, loginRefusal } from './flows.js';
import { metadataFilter } from './metadata-filter.js';
import * as store from './store.js';

export type ApplicationOperation =
  | 'createApplication'
  | 'listApplications'
  | 'getApplication'
  | 'updateApplication'
  | 'deleteApplication'
  | 'listApplicationIdentities'
  | 'listApplicationAuthFlows'
  | 'createApplicationAuthFlow'
  | 'updateApplicationAuthFlow'
  | 'deleteApplicationAuthFlow';

const NOT_FOUND = 'Application not found';

export function applicationResource(row: store.ApplicationSummary): components['schemas']['Application'] {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    description: row.description,
    identity_count: Number(row.identity_count),
    auth_methods: row.auth_methods,
    allowed_domains: row.allowed_domains,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function flowResource(row: store.AuthFlowRow): components['schemas']['AuthFlow'] {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    is_recommended: row.is_recommended,
    methods: row.methods,
    custom_fields: row.custom_fields,
    login: completeLogin(row.login),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** `?page` or `?limit` asks for a page; neither lists everything (the hosted vendor's lists are not paginated). */
export function pageOf(q: { page?: number; limit?: number }): store.Page | undefined {
  if (q.page === undefined && q.limit === undefined) return undefined;
  return { page: q.page ?? 1, limit: q.limit ?? 100 };
}

/** A custom flow's `{{custom.<name>}}` must be one of its custom_fields. */
function customFieldRefusal(login: store.AuthFlowLogin, fields: { name: string }[]): string | undefined {
  const known = new Set(fields.map((f) => f.name));
  for (const [i, step] of (login.steps ?? []).entries()) {
    for (const m of (step.value ?? '').matchAll(/\{\{\s*custom\.([^}\s]+)\s*\}\}/g)) {
      if (!known.has(m[1]!)) return `login.steps[${i}]: {{custom.${m[1]}}} is not one of the flow's custom_fields`;
    }
  }
  return undefined;
}

export function applicationHandlers(d: { db: Db }): Pick<AppHandlers, ApplicationOperation> {
  return {
    async createApplication(req, ctx) {
      const url = new URL(req.body.source);
      const row = await store.insertApplication(d.db, {
        id: randomUUID(),
        projectId: ctx.projectId,
        name: req.body.name ?? url.hostname,
        url: req.body.source,
        description: req.body.description,
      });
      return {
        status: 201,
        body: { id: row.id, name: row.name, url: row.url, description: row.description, created_at: row.created_at.toISOString() },
      };
    },

    async listApplications(req, ctx) {
      const { total, items } = await store.listApplications(d.db, ctx.projectId, req.query.search, pageOf(req.query));
      return { status: 200, body: { total, applications: items.map(applicationResource) } };
    },

    async getApplication(req, ctx) {
      const row = await store.getApplication(d.db, ctx.projectId, req.params.id);
      return row ? { status: 200, body: applicationResource(row) } : fail(404, NOT_FOUND);
    },

    async updateApplication(req, ctx) {
      const b = req.body;
      const found = await store.updateApplication(d.db, ctx.projectId, req.params.id, {
        name: b.name,
        description: b.description,
        allowed_domains: b.allowed_domains && [...new Set(b.allowed_domains.map((h) => h.toLowerCase()))],
      });
      if (!found) return fail(404, NOT_FOUND);
      return { status: 200, body: applicationResource((await store.getApplication(d.db, ctx.projectId, req.params.id))!) };
    },

    async deleteApplication(req, ctx) {
      const result = await store.deleteApplication(d.db, ctx.projectId, req.params.id);
      if (!result) return fail(404, NOT_FOUND);
      if (result.identities > 0) {
        return fail(409, `Application has ${result.identities} ${result.identities === 1 ? 'identity' : 'identities'}; delete them first`);
      }
      return { status: 200, body: { success: true } };
    },

    async listApplicationIdentities(req, ctx) {
      if (!(await store.getApplication(d.db, ctx.projectId, req.params.id))) return fail(404, NOT_FOUND);
      const metadata = metadataFilter(req.query as Record<string, unknown>);
      if (!metadata.ok) return fail(400, metadata.message);
      const { items } = await store.listIdentities(d.db, ctx.projectId, { applicationId: req.params.id, search: req.query.search, metadata: metadata.value });
      return {
        status: 200,
        body: {
          identities: items.map((r) => ({
            id: r.id,
            name: r.name,
            auth_flow: r.auth_flow_id,
            status: r.status,
            created_at: r.created_at.toISOString(),
            updated_at: r.updated_at.toISOString(),
          })),
        },
      };
    },

    async listApplicationAuthFlows(req, ctx) {
      if (!(await store.getApplication(d.db, ctx.projectId, req.params.id))) return fail(404, NOT_FOUND);
      const rows = await store.listAuthFlows(d.db, ctx.projectId, req.params.id);
      return { status: 200, body: { auth_flows: rows.map(flowResource) } };
    },

    async createApplicationAuthFlow(req, ctx) {
      const app = await store.getApplication(d.db, ctx.projectId, req.params.id);
      if (!app) return fail(404, NOT_FOUND);
      const b = req.body;
      const login = completeLogin(b.login);
      const customFields = b.custom_fields ?? [];
      const refused = loginRefusal(login, b.methods, app) ?? customFieldRefusal(login, customFields);
      if (refused) return fail(400, refused);
      const row = await store.insertAuthFlow(d.db, {
        id: randomUUID(),
        project_id: ctx.projectId,
        application_id: app.id,
        name: b.name,
        description: b.description ?? null,
        is_recommended: b.is_recommended ?? false,
        methods: b.methods,
        custom_fields: customFields,
        login,
      });
      return { status: 201, body: flowResource(row) };
    },

    async updateApplicationAuthFlow(req, ctx) {
      const app = await store.getApplication(d.db, ctx.projectId, req.params.id);
      const row = app && (await store.getAuthFlow(d.db, ctx.projectId, app.id, req.params.authFlowId));
      if (!app || !row) return fail(404, app ? 'Authentication flow not found' : NOT_FOUND);
      const b = req.body;
      const next: store.AuthFlowRow = {
        ...row,
        name: b.name ?? row.name,
        description: b.description ?? row.description,
        is_recommended: b.is_recommended ?? row.is_recommended,
        methods: b.methods ?? row.methods,
        custom_fields: b.custom_fields ?? row.custom_fields,
        login: b.login ? completeLogin(b.login) : row.login,
      };
      const refused = loginRefusal(next.login, next.methods, app) ?? customFieldRefusal(next.login, next.custom_fields);
      if (refused) return fail(400, refused);
      return { status: 200, body: flowResource(await store.replaceAuthFlow(d.db, next)) };
    },

    async deleteApplicationAuthFlow(req, ctx) {
      const deleted = await store.deleteAuthFlow(d.db, ctx.projectId, req.params.id, req.params.authFlowId);
      return deleted ? { status: 200, body: { success: true } } : fail(404, 'Authentication flow not found');
    },
  };
}
