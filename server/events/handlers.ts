// The eight webhook operations, typed by the generated Handlers.
import type { EmitSignals } from '../outbox/emit.js';
import type { Secrets } from '../secrets/index.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { Db } from '../store/db.js';
import { validateDeliveryQuery, WebhookError, type WebhookPolicy } from './webhooks-logic.js';
import { createWebhook, deleteWebhook, getWebhook, listDeliveries, listWebhooks, rotateWebhookSecret, sendTestEvent, updateWebhook } from './webhooks-store.js';

export type WebhookOperation =
  | 'createWebhook'
  | 'listWebhooks'
  | 'getWebhook'
  | 'updateWebhook'
  | 'deleteWebhook'
  | 'rotateWebhookSecret'
  | 'testWebhook'
  | 'listWebhookDeliveries';

export type WebhookHandlers = Pick<AppHandlers, WebhookOperation>;

export interface WebhookHandlerOptions {
  db: Db;
  /** Told: deliveries became due (a webhook enabled, a test event sent). */
  signals: EmitSignals;
  /** Seals the signing secrets stored (sealed-secrets.ts). */
  secrets: Secrets;
  /** ALLOW_PRIVATE_NETWORKS. */
  allowPrivate: boolean;
  /** WEBHOOK_MAX_PER_PROJECT (default 20). */
  maxPerProject?: number;
  /** Base of links in test events (PUBLIC_URL). */
  publicUrl?: string;
  /** DNS override for tests. */
  resolve?: WebhookPolicy['resolve'];
}

const NOT_FOUND = 'Webhook not found';

function page(q: { page?: number; limit?: number } | undefined) {
  return { page: q?.page ?? 1, limit: q?.limit ?? 20 };
}

/** Only WebhookErrors become 4xx answers; anything else is the app's 500. */
function asWebhookError(err: unknown): WebhookError {
  if (err instanceof WebhookError) return err;
  throw err;
}

export function webhookHandlers(options: WebhookHandlerOptions): WebhookHandlers {
  const { db } = options;
  const policy: WebhookPolicy = {
    allowPrivate: options.allowPrivate,
    maxPerProject: options.maxPerProject,
    resolve: options.resolve,
  };
  return {
    async createWebhook(req, ctx) {
      try {
        return { status: 200, body: await createWebhook(db, options.secrets, ctx.projectId, req.body, policy) };
      } catch (err) {
        const e = asWebhookError(err);
        return e.status === 409 ? fail(409, e.message) : fail(400, e.message);
      }
    },

    async listWebhooks(req, ctx) {
      return { status: 200, body: await listWebhooks(db, ctx.projectId, page(req.query)) };
    },

    async getWebhook(req, ctx) {
      const wh = await getWebhook(db, ctx.projectId, req.params.id);
      return wh ? { status: 200, body: wh } : fail(404, NOT_FOUND);
    },

    async updateWebhook(req, ctx) {
      try {
        const wh = await updateWebhook(db, options.signals, ctx.projectId, req.params.id, req.body ?? {}, policy);
        return wh ? { status: 200, body: wh } : fail(404, NOT_FOUND);
      } catch (err) {
        return fail(400, asWebhookError(err).message);
      }
    },

    async deleteWebhook(req, ctx) {
      const deleted = await deleteWebhook(db, ctx.projectId, req.params.id);
      return deleted ? { status: 200, body: { id: req.params.id, deleted: true } } : fail(404, NOT_FOUND);
    },

    async rotateWebhookSecret(req, ctx) {
      const wh = await rotateWebhookSecret(db, options.secrets, ctx.projectId, req.params.id);
      return wh ? { status: 200, body: wh } : fail(404, NOT_FOUND);
    },

    async testWebhook(req, ctx) {
      try {
        const r = await sendTestEvent(db, options.signals, ctx.projectId, req.params.id, req.body?.event_type, { publicUrl: options.publicUrl });
        return r ? { status: 200, body: r } : fail(404, NOT_FOUND);
      } catch (err) {
        return fail(400, asWebhookError(err).message);
      }
    },

    async listWebhookDeliveries(req, ctx) {
      let query;
      try {
        query = validateDeliveryQuery((req.query ?? {}) as Record<string, unknown>);
      } catch (err) {
        return fail(400, asWebhookError(err).message);
      }
      const r = await listDeliveries(db, ctx.projectId, req.params.id, query);
      return r ? { status: 200, body: r } : fail(404, NOT_FOUND);
    },
  };
}
