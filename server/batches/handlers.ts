// The Batches operations of the contract: create (validate, store, answer at once), get,
// list, cancel, retry the failed items. The work itself is the worker's (worker.ts).
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { components } from '../../generated/types.js';
import { refuseUnpaid } from '../credits/account.js';
import * as store from './store.js';

type BatchSummary = components['schemas']['BatchSummary'];
type BatchItem = components['schemas']['BatchItem'];

export type BatchHandlers = Pick<AppHandlers, 'createBatchSessions' | 'listBatchSessions' | 'getBatchSessions' | 'cancelBatchSessions' | 'retryBatchSessions'>;

/** What the handlers need of the SessionManager. */
export interface BatchSessionUrls {
  validate(projectId: string, body: store.SessionCreateBody | undefined): Promise<string | undefined>;
  cdpUrl(id: string, token: string): string;
  liveViewUrl(id: string, token: string): string;
}

export interface BatchHandlerOptions {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: BatchSessionUrls;
  /** Told when a batch is waiting. */
  worker: { nudge(): void };
}

export function summary(b: store.BatchRow): BatchSummary {
  const terminal = b.completed_requests + b.failed_requests + b.cancelled_requests;
  return {
    batch_id: b.id,
    status: b.status,
    total_requests: b.total_requests,
    completed_requests: b.completed_requests,
    failed_requests: b.failed_requests,
    pending_requests: Math.max(0, b.total_requests - terminal),
    progress: Math.round((terminal / b.total_requests) * 10_000) / 100,
    created_at: b.created_at.toISOString(),
    completed_at: b.completed_at?.toISOString() ?? null,
    metadata: b.metadata ?? {},
  };
}

/** An item as the API answers it: its session's URLs once it has one. */
export function itemAnswer(sessions: BatchSessionUrls) {
  return (i: store.ItemRow): BatchItem => {
    const made = i.status === 'completed' && i.session_id !== null;
    return {
      item_index: i.item_index,
      // Being provisioned is still waiting, as far as the batch's reader is concerned.
      status: i.status === 'provisioning' ? 'pending' : i.status,
      session_id: made ? i.session_id : null,
      cdp_url: made && i.cdp_token ? sessions.cdpUrl(i.session_id!, i.cdp_token) : null,
      live_view_url: made && i.live_view_token ? sessions.liveViewUrl(i.session_id!, i.live_view_token) : null,
      error: i.status === 'failed' ? (i.error ?? 'The session could not be created') : null,
      retry_count: i.retry_count,
    };
  };
}

export function batchHandlers({ db, config, log, sessions, worker }: BatchHandlerOptions): BatchHandlers {
  const item = itemAnswer(sessions);

  return {
    async createBatchSessions(req, ctx) {
      const { count, configuration = {}, metadata = {} } = req.body;
      // The whole configuration is checked now, as POST /v1/sessions would: nothing is
      // queued that every item would fail on.
      const refused = await sessions.validate(ctx.projectId, configuration);
      if (refused) return fail(400, `configuration: ${refused}`);
      const unpaid = await refuseUnpaid(db, ctx.projectId, config);
      if (unpaid) return fail(402, unpaid);
      const batch = await store.createBatch(db, {
        id: randomUUID(),
        projectId: ctx.projectId,
        apiKeyId: ctx.apiKeyId,
        count,
        configuration,
        metadata,
        queueTimeoutSeconds: config.batchQueueTimeoutSeconds,
      });
      log.info({ batchId: batch.id, count }, 'batch accepted');
      worker.nudge();
      return {
        status: 200,
        body: { data: { batch_id: batch.id, status: batch.status, total_requests: batch.total_requests, created_at: batch.created_at.toISOString() } },
      };
    },

    async listBatchSessions(req, ctx) {
      const { page = 1, limit = 20, status } = req.query;
      const { rows, total } = await store.listBatches(db, ctx.projectId, { page, limit, status });
      return { status: 200, body: { data: rows.map(summary), pagination: { page, limit, total, total_pages: Math.ceil(total / limit) } } };
    },

    async getBatchSessions(req, ctx) {
      const batch = await store.getBatch(db, ctx.projectId, req.params.batch_id);
      if (!batch) return fail(404, 'Batch not found');
      const items = await store.listItems(db, ctx.projectId, batch);
      return { status: 200, body: { data: { ...summary(batch), sessions: items.map(item) } } };
    },

    async cancelBatchSessions(req, ctx) {
      const result = await store.cancelBatch(db, ctx.projectId, req.params.batch_id);
      if (result === 'not_found') return fail(404, 'Batch not found');
      if (result === 'not_pending') {
        const batch = await store.getBatch(db, ctx.projectId, req.params.batch_id);
        return fail(409, `The batch is ${batch?.status ?? 'no longer pending'}; only a pending batch can be cancelled`);
      }
      return { status: 200, body: { data: { batch_id: result.id, status: result.status } } };
    },

    async retryBatchSessions(req, ctx) {
      const { retry_failed_only = true, max_retries = 1 } = req.body ?? {};
      // Re-creating items that did not fail (sessions that ran, or cancelled ones) is not
      // something the vendor documents either: refused rather than guessed at.
      if (!retry_failed_only) return fail(400, 'retry_failed_only: false is not offered; only the failed items of a batch are retried');
      const r = await store.retryBatch(db, ctx.projectId, req.params.batch_id, {
        attempts: max_retries,
        queueTimeoutSeconds: config.batchQueueTimeoutSeconds,
      });
      if (r === 'not_found') return fail(404, 'Batch not found');
      if (r === 'cancelled') return fail(409, 'The batch was cancelled; its items are not retried');
      if (r === 'nothing_failed') return fail(400, 'No failed sessions to retry');
      log.info({ batchId: r.batch.id, retried: r.retried, attempts: max_retries }, 'batch retried');
      worker.nudge();
      const each = max_retries === 1 ? 'one attempt each' : `up to ${max_retries} attempts each`;
      return {
        status: 200,
        body: {
          data: {
            batch_id: r.batch.id,
            status: r.batch.status,
            retried_sessions: r.retried,
            message: `${r.retried} failed session${r.retried === 1 ? ' is' : 's are'} queued again, ${each}`,
          },
        },
      };
    },
  };
}
