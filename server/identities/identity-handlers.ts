// The Identities operations. Credentials are write-only: sealed as they arrive, and reads
// say only which fields are set. An identity joins the project's application of its login
// page's origin, made on the way when there is none.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { pageOf } from './application-handlers.js';
import { metadataFilter } from './metadata-filter.js';
import { CredentialError, credentialFields, sealCredentials, type SealedCredentials } from './credentials.js';
import type { LoginScreenshots } from './screenshots.js';
import * as store from './store.js';

export type IdentityOperation =
  | 'createIdentity'
  | 'listIdentities'
  | 'getIdentity'
  | 'updateIdentity'
  | 'deleteIdentity'
  | 'getIdentityCredentials'
  | 'getIdentityLoginScreenshot';

const NOT_FOUND = 'Identity not found';

function identityResource(row: store.IdentityRow): components['schemas']['Identity'] {
  return {
    id: row.id,
    name: row.name,
    source: row.source,
    status: row.status,
    metadata: row.metadata,
    application_id: row.application_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export interface IdentityHandlerDeps {
  db: Db;
  secrets: Secrets;
  /** Signs the identity in now, in a session of its own that ends after; answers why it could not start one. */
  signInNow(owner: { projectId: string; apiKeyId: string }, identityId: string): Promise<string | undefined>;
  /** Removes the identity's saved state (its profile, the screenshot of a login that failed). */
  forgetState(projectId: string, identityId: string): Promise<void>;
  screenshots: LoginScreenshots;
}

export function identityHandlers(d: IdentityHandlerDeps): Pick<AppHandlers, IdentityOperation> {
  const seal = async (id: string, list: components['schemas']['IdentityCredentialList'] | undefined): Promise<SealedCredentials | string> => {
    try {
      return await sealCredentials(d.secrets, id, list ?? []);
    } catch (err) {
      if (err instanceof CredentialError) return err.message;
      throw err;
    }
  };

  return {
    async createIdentity(req, ctx) {
      const b = req.body;
      const id = randomUUID();
      const credentials = await seal(id, b.credentials);
      if (typeof credentials === 'string') return fail(400, credentials);
      const app =
        (await store.applicationForSource(d.db, ctx.projectId, b.source)) ??
        (await store.insertApplication(d.db, {
          id: randomUUID(),
          projectId: ctx.projectId,
          name: b.applicationName ?? new URL(b.source).hostname,
          url: b.source,
          description: b.applicationDescription,
        }));
      let row = await store.insertIdentity(d.db, {
        id,
        projectId: ctx.projectId,
        applicationId: app.id,
        name: b.name ?? 'Unnamed Identity',
        source: b.source,
        metadata: b.metadata ?? {},
        credentials,
      });
      if (req.query.validateAsync === false) {
        const refused = await d.signInNow(ctx, id);
        if (refused) {
          // Nothing was tried: the identity is not kept half made.
          await store.deleteIdentity(d.db, ctx.projectId, id);
          return fail(400, `validateAsync=false: no session could be started to sign in: ${refused}`);
        }
        row = (await store.getIdentity(d.db, ctx.projectId, id)) ?? row;
      }
      return {
        status: 201,
        body: {
          id: row.id,
          name: row.name,
          status: row.status,
          metadata: row.metadata,
          application_id: row.application_id,
          created_at: row.created_at.toISOString(),
        },
      };
    },

    async listIdentities(req, ctx) {
      const q = req.query;
      const metadata = metadataFilter(q as Record<string, unknown>);
      if (!metadata.ok) return fail(400, metadata.message);
      const { total, items } = await store.listIdentities(
        d.db,
        ctx.projectId,
        { applicationId: q.application_id, status: q.status, search: q.search, metadata: metadata.value },
        pageOf(q),
      );
      return { status: 200, body: { total, identities: items.map(identityResource) } };
    },

    async getIdentity(req, ctx) {
      const row = await store.getIdentity(d.db, ctx.projectId, req.params.id);
      return row ? { status: 200, body: identityResource(row) } : fail(404, NOT_FOUND);
    },

    async updateIdentity(req, ctx) {
      const b = req.body;
      let credentials: SealedCredentials | undefined;
      if (b.credentials) {
        const sealed = await seal(req.params.id, b.credentials);
        if (typeof sealed === 'string') return fail(400, sealed);
        credentials = sealed;
      }
      const row = await store.updateIdentity(d.db, ctx.projectId, req.params.id, { name: b.name, metadata: b.metadata, credentials });
      if (!row) return fail(404, NOT_FOUND);
      // New credentials: the state signed in with the old ones goes.
      if (credentials) await d.forgetState(ctx.projectId, row.id);
      return { status: 200, body: { id: row.id, name: row.name, metadata: row.metadata, updated_at: row.updated_at.toISOString() } };
    },

    async deleteIdentity(req, ctx) {
      if (!(await store.deleteIdentity(d.db, ctx.projectId, req.params.id))) return fail(404, NOT_FOUND);
      await d.forgetState(ctx.projectId, req.params.id);
      return { status: 200, body: { message: 'Identity deleted successfully' } };
    },

    async getIdentityCredentials(req, ctx) {
      const row = await store.getIdentity(d.db, ctx.projectId, req.params.id);
      if (!row) return fail(404, NOT_FOUND);
      return { status: 200, body: { id: row.id, name: row.name, source: row.source, credentials: credentialFields(row.credentials) } };
    },

    async getIdentityLoginScreenshot(req, ctx) {
      const row = await store.getIdentity(d.db, ctx.projectId, req.params.id);
      const png = row && (await d.screenshots.read(ctx.projectId, row.id));
      if (!png) return fail(404, row ? 'The identity has no screenshot of a login that stopped on an unknown page' : NOT_FOUND);
      return { status: 200, contentType: 'image/png', body: png, headers: { 'Cache-Control': 'private, no-store' } };
    },
  };
}
