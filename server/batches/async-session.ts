// POST /v1/sessions/async and its status: a session created in the background is a batch of
// one. The batch's queue, worker, recovery after a node's death and its batch.completed /
// batch.failed event are what the vendor's async session needs, so it is not built twice.
import { randomUUID } from 'node:crypto';
import type { components } from '../../generated/types.js';
import { refuseUnpaid } from '../credits/account.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { BatchHandlerOptions } from './handlers.js';
import * as store from './store.js';

type AsyncStatus = components['schemas']['AsyncSessionStatus']['data'];
type BatchItem = components['schemas']['BatchItem'];

export type AsyncSessionHandlers = Pick<AppHandlers, 'createSessionAsync' | 'getAsyncSessionStatus'>;

/** The request's status and phase, from its one item. */
function stateOf(item: store.ItemRow | undefined): Pick<AsyncStatus, 'status' | 'progress'> {
  switch (item?.status) {
    case 'provisioning':
      return { status: 'processing', progress: { current_phase: 'provisioning' } };
    case 'completed':
      return { status: 'ready', progress: { current_phase: 'ready' } };
    case 'failed':
      return { status: 'failed', progress: { current_phase: 'done' } };
    case 'cancelled':
      return { status: 'cancelled', progress: { current_phase: 'done' } };
    default:
      return { status: 'pending', progress: { current_phase: 'queued' } };
  }
}

export function asyncSessionHandlers(d: BatchHandlerOptions & { item(i: store.ItemRow): BatchItem }): AsyncSessionHandlers {
  return {
    async createSessionAsync(req, ctx) {
      const configuration = req.body ?? {};
      // Checked now, as POST /v1/sessions would: a body every attempt would fail on is refused.
      const refused = await d.sessions.validate(ctx.projectId, configuration);
      if (refused) return fail(400, refused);
      const unpaid = await refuseUnpaid(d.db, ctx.projectId, d.config);
      if (unpaid) return fail(402, unpaid);
      const batch = await store.createBatch(d.db, {
        id: randomUUID(),
        projectId: ctx.projectId,
        apiKeyId: ctx.apiKeyId,
        count: 1,
        configuration,
        metadata: {},
        queueTimeoutSeconds: d.config.batchQueueTimeoutSeconds,
      });
      d.log.info({ batchId: batch.id }, 'async session accepted');
      d.worker.nudge();
      return { status: 200, body: { data: { request_id: batch.id, status: 'pending', session_id: null } } };
    },

    async getAsyncSessionStatus(req, ctx) {
      const batch = await store.getBatch(d.db, ctx.projectId, req.params.request_id);
      if (!batch || batch.total_requests !== 1) return fail(404, 'No async session request with this id');
      const [item] = await store.listItems(d.db, ctx.projectId, batch);
      const answer = d.item(item);
      return {
        status: 200,
        body: {
          data: {
            request_id: batch.id,
            ...stateOf(item),
            created_at: batch.created_at.toISOString(),
            // Absent until there is something to say: a session, or why there is none.
            ...(answer.session_id || answer.error ? { session: answer } : {}),
          },
        },
      };
    },
  };
}
