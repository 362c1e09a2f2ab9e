// B1-B5 (docs/conformance-rules.md, Batches): POST /v1/batch-sessions answers at once with
// a pending batch; counts out of 1..5000 are refused; a batch ends completed with
// batch.completed when a session was created, failed with batch.failed when none was; the
// events carry counts that add up. Events are observed the way a user would: a webhook
// subscribed to both batch events, pointing at a receiver on the suite's fixture server.
// B6: POST /v1/batch-sessions/{batch_id}/retry refuses a batch with nothing failed (400) and
// an unknown batch (404), and puts B4's failed item back in the queue, the batch pending.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line } from '../http.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

const HEADLESS_CONFIGURATION = { browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 2, max_duration: 5 } } };
/** How long a batch of one session may take to end, and an event to arrive after it. */
const BATCH_WAIT_MS = 90_000;
const EVENT_WAIT_MS = 60_000;
/** B4 fills the server's browsers to make every item fail: only where that is cheap. */
const B4_MAX_BROWSERS = 2;
const B4_WAIT_MS = 15 * 60_000;

interface Envelope {
  id: string;
  type: string;
  data: Record<string, unknown>;
}

interface Ended {
  batchId: string;
  detail: Record<string, any>;
  event?: Envelope;
}

function answer(t: T, ex: Exchange) {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

export default defineRules((ctx: SuiteContext) => {
  const create = ctx.contract.operation('createBatchSessions');
  const get = ctx.contract.operation('getBatchSessions');

  /** The webhook receiver, made once: every batch event the server sends, by batch id. */
  let receiver: Promise<{ events: Envelope[] } | { problem: string }> | undefined;
  const receive = () =>
    (receiver ??= (async () => {
      const events: Envelope[] = [];
      const path = '/conformance/batch-events';
      ctx.fixtures.route('POST', path, (_req, res, body) => {
        try {
          const env = JSON.parse(body.toString('utf8')) as Envelope;
          if (env && typeof env.type === 'string' && env.type.startsWith('batch.')) events.push(env);
        } catch {
          // not an envelope; W rules judge deliveries
        }
        res.writeHead(204).end();
      });
      const op = ctx.contract.operation('createWebhook');
      const ex = await ctx.call(await ctx.build(op), {
        bodyValue: { url: await ctx.fixtures.url(path), subscribed_events: ['batch.completed', 'batch.failed'], description: 'conformance: batch events' },
      });
      const status = ex.response?.status;
      if (status === undefined || status < 200 || status >= 300) {
        return { problem: `a webhook for the batch events could not be made: ${ex.response ? line(ex.request, ex.response, 200) : ex.error}` };
      }
      return { events };
    })());

  const createBatch = async (t: T, count: number, configuration: unknown = HEADLESS_CONFIGURATION) => {
    const started = performance.now();
    const ex = await ctx.call(await ctx.build(create), { bodyValue: { count, configuration, metadata: { conformance: 'batches' } } });
    const res = answer(t, ex);
    t.assert(res.status === 200, `POST /v1/batch-sessions answered ${line(ex.request, res, 300)}`);
    return { ex, res, elapsedMs: performance.now() - started, data: (res.json as { data: Record<string, any> }).data };
  };

  const detail = async (t: T, batchId: string) => {
    const ex = await ctx.call(await ctx.build(get, { pathParams: { batch_id: batchId } }));
    const res = answer(t, ex);
    t.assert(res.status === 200, `GET /v1/batch-sessions/${batchId} answered ${line(ex.request, res, 300)}`);
    const verdict = bodyVerdict(ctx.contract, get, res);
    t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? verdict.message : '');
    return (res.json as { data: Record<string, any> }).data;
  };

  const endSession = async (id: string) => {
    await ctx.call(await ctx.build(ctx.contract.operation('endSession'), { pathParams: { session_id: id } }));
  };

  /** Cancels a batch still pending and ends the sessions it made: browsers for the next checks. */
  const dispose = async (t: T, batchId: string) => {
    await ctx.call(await ctx.build(ctx.contract.operation('cancelBatchSessions'), { pathParams: { batch_id: batchId } }));
    // Items already being provisioned finish after the cancel.
    let d = await detail(t, batchId);
    for (const deadline = Date.now() + BATCH_WAIT_MS; d.pending_requests > 0 && Date.now() < deadline; d = await detail(t, batchId)) await sleep(500);
    for (const s of d.sessions ?? []) if (typeof s.session_id === 'string') await endSession(s.session_id);
  };

  const waitEnd = async (t: T, batchId: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const d = await detail(t, batchId);
      if (d.status !== 'pending') return d;
      t.assert(Date.now() < deadline, `the batch is still pending after ${timeoutMs / 1000} s: ${JSON.stringify(d).slice(0, 400)}`);
      await sleep(500);
    }
  };

  const waitEvent = async (events: Envelope[], batchId: string): Promise<Envelope | undefined> => {
    const deadline = Date.now() + EVENT_WAIT_MS;
    for (;;) {
      const e = events.find((x) => x.data?.batch_id === batchId);
      if (e || Date.now() > deadline) return e;
      await sleep(250);
    }
  };

  /** The end of one batch, once per run: B3's checks and B5 look at the same batch. */
  let completedRun: Promise<Ended | { problem: string }> | undefined;
  const completed = (t: T) =>
    (completedRun ??= (async () => {
      const r = await receive();
      const { data } = await createBatch(t, 1);
      const ended = await waitEnd(t, data.batch_id, BATCH_WAIT_MS);
      const event = 'events' in r ? await waitEvent(r.events, data.batch_id) : undefined;
      for (const s of ended.sessions ?? []) if (typeof s.session_id === 'string') await endSession(s.session_id);
      return { batchId: data.batch_id, detail: ended, event };
    })().catch((err: Error) => ({ problem: err.message })));

  let failedRun: Ended | undefined;

  const expectEventData = (t: T, e: Envelope, batch: Ended['detail']) => {
    const d = e.data;
    const keys = Object.keys(d).sort();
    t.equal(keys, ['batch_id', 'completed_requests', 'failed_requests', 'status', 'total_requests'], `${e.type} data fields`);
    for (const k of ['total_requests', 'completed_requests', 'failed_requests'])
      t.assert(Number.isInteger(d[k]) && (d[k] as number) >= 0, `${e.type} data.${k} is ${JSON.stringify(d[k])}`);
    t.assert(
      (d.completed_requests as number) + (d.failed_requests as number) === d.total_requests,
      `${e.type}: completed_requests ${d.completed_requests} + failed_requests ${d.failed_requests} ≠ total_requests ${d.total_requests}`,
    );
    t.equal(d.status, e.type === 'batch.completed' ? 'completed' : 'failed', `${e.type} data.status`);
    t.equal(
      { total: d.total_requests, completed: d.completed_requests, failed: d.failed_requests },
      { total: batch.total_requests, completed: batch.completed_requests, failed: batch.failed_requests },
      `${e.type} counts against GET /v1/batch-sessions/${d.batch_id}`,
    );
    const schema = ctx.contract.spec.components?.schemas?.[e.type === 'batch.completed' ? 'EventBatchCompletedData' : 'EventBatchFailedData'];
    if (schema) {
      const error = ctx.contract.validate(schema, d, 'data');
      t.assert(!error, `${e.type} data: ${error}`);
    }
  };

  return [
    check('B1 POST /v1/batch-sessions answers at once {data: {batch_id, status: "pending", total_requests, created_at}}', async (t: T) => {
      const { ex, res, elapsedMs, data } = await createBatch(t, 1);
      const verdict = bodyVerdict(ctx.contract, create, res);
      t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? verdict.message : '');
      t.equal(Object.keys(data).sort(), ['batch_id', 'created_at', 'status', 'total_requests'], 'data fields');
      t.assert(
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(data.batch_id),
        `batch_id ${JSON.stringify(data.batch_id)} is not a uuid`,
      );
      t.equal(data.status, 'pending', 'status (processing is asynchronous)');
      t.equal(data.total_requests, 1, 'total_requests');
      t.assert(!Number.isNaN(Date.parse(data.created_at)), `created_at ${JSON.stringify(data.created_at)} is not a date-time`);
      t.assert(elapsedMs < 5_000, `the answer took ${Math.round(elapsedMs)} ms, not "at once"`);
      // The batch was accepted, not processed: sessions start afterwards.
      const d = await detail(t, data.batch_id);
      t.equal(d.total_requests, 1, 'GET total_requests');
      t.note(`${line(ex.request, res, 120)} in ${Math.round(elapsedMs)} ms`);
      await dispose(t, data.batch_id);
    }),

    check('B2 count above 5,000 or below 1 answers 400', async (t: T) => {
      for (const count of [5001, 0, -1]) {
        const ex = await ctx.call(await ctx.build(create), { bodyValue: { count, configuration: HEADLESS_CONFIGURATION } });
        const res = answer(t, ex);
        t.assert(res.status === 400, `count ${count}: ${line(ex.request, res, 200)}`);
        const verdict = bodyVerdict(ctx.contract, create, res);
        t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? verdict.message : '');
      }
      const ex = await ctx.call(await ctx.build(create), { bodyValue: { count: 5000, configuration: { session: { no_such_option: true } } } });
      t.assert(answer(t, ex).status === 400, `count 5000 with an invalid configuration: ${line(ex.request, answer(t, ex), 200)}`);
      t.note('5001, 0, -1 → 400');
    }),

    check('B3 all items terminal and at least one succeeded → completed', async (t: T) => {
      const r = await completed(t);
      if ('problem' in r) t.fail(r.problem);
      const b = r.detail;
      t.equal(b.status, 'completed', `status of batch ${r.batchId}`);
      t.assert(b.completed_requests >= 1, `completed_requests ${b.completed_requests}`);
      t.equal(b.pending_requests, 0, 'pending_requests');
      t.equal(b.completed_requests + b.failed_requests, b.total_requests, 'completed_requests + failed_requests = total_requests');
      const made = (b.sessions as any[]).filter((s) => s.status === 'completed');
      t.assert(
        made.length === b.completed_requests && made.every((s) => typeof s.session_id === 'string' && typeof s.cdp_url === 'string'),
        `items: ${JSON.stringify(b.sessions).slice(0, 300)}`,
      );
      t.note(`batch ${r.batchId}: ${b.completed_requests} of ${b.total_requests} created`);
    }),

    check('B3 a completed batch sends batch.completed', async (t: T) => {
      const r = await completed(t);
      if ('problem' in r) t.fail(r.problem);
      const rec = await receive();
      if ('problem' in rec) t.fail(`cannot observe batch.completed: ${rec.problem}`);
      t.assert(r.event, `no batch event for batch ${r.batchId} reached the webhook within ${EVENT_WAIT_MS / 1000} s of its end`);
      t.equal(r.event.type, 'batch.completed', `the event of batch ${r.batchId}`);
      t.note(`${r.event.id} ${r.event.type}`);
    }),

    check('B4 every item failed, or none produced → failed and batch.failed', async (t: T) => {
      // The one failure every implementation has: no browser for the item until the queue
      // gives up. Only done where filling the server's browsers is cheap.
      const billing = await ctx.call(await ctx.build(ctx.contract.operation('getBilling')));
      const max = (billing.response?.json as { data?: { max_concurrent_browsers?: number } } | undefined)?.data?.max_concurrent_browsers;
      if (typeof max !== 'number') t.skip(`GET /v1/billing gave no max_concurrent_browsers (${billing.response?.status ?? billing.error})`);
      if (max > B4_MAX_BROWSERS) {
        t.skip(
          `making every item fail needs the server's ${max} browsers taken until its batch queue gives up; run against a server with at most ` +
            `${B4_MAX_BROWSERS} (ours: MAX_CONCURRENT_BROWSERS=1 BATCH_QUEUE_TIMEOUT_SECONDS=5)`,
        );
      }
      const rec = await receive();
      const sessionOp = ctx.contract.operation('createSession');
      const fillers: string[] = [];
      let b: Record<string, any>;
      let data: Record<string, any>;
      try {
        for (let i = 0; i < max; i++) {
          const ex = await ctx.call(await ctx.build(sessionOp), { bodyValue: HEADLESS_CONFIGURATION });
          const status = ex.response?.status;
          // 429: the server is already full, which is what is wanted.
          t.assert(status === 200 || status === 429, `filling the browsers: ${ex.response ? line(ex.request, ex.response, 200) : ex.error}`);
          if (status === 200) fillers.push((ex.response!.json as { data: { id: string } }).data.id);
        }
        ({ data } = await createBatch(t, 1));
        b = await waitEnd(t, data.batch_id, B4_WAIT_MS);
      } finally {
        for (const id of fillers) await endSession(id);
      }
      const event = 'events' in rec ? await waitEvent(rec.events, data.batch_id) : undefined;
      failedRun = { batchId: data.batch_id, detail: b, event };
      t.equal(b.status, 'failed', `status of batch ${data.batch_id}`);
      t.equal({ completed: b.completed_requests, failed: b.failed_requests }, { completed: 0, failed: 1 }, 'counts');
      if ('problem' in rec) t.fail(`cannot observe batch.failed: ${rec.problem}`);
      t.assert(event, `no batch event for batch ${data.batch_id} reached the webhook within ${EVENT_WAIT_MS / 1000} s of its end`);
      t.equal(event.type, 'batch.failed', 'the event');
      t.note(`batch ${data.batch_id}: ${b.sessions?.[0]?.error ?? ''}`);
    }),

    check('B6 retry of a batch with no failed item answers 400, of an unknown batch 404', async (t: T) => {
      const retry = ctx.contract.operation('retryBatchSessions');
      const { data } = await createBatch(t, 1);
      try {
        const ex = await ctx.call(await ctx.build(retry, { pathParams: { batch_id: data.batch_id } }), { bodyValue: { max_retries: 1 } });
        const res = answer(t, ex);
        // The item may have failed already (a server without a free browser): then it is retried.
        const d = await detail(t, data.batch_id);
        const failedBefore = res.status === 200;
        t.assert(res.status === 400 || (failedBefore && d.status === 'pending'), `a retry with nothing failed: ${line(ex.request, res, 200)}`);
        const verdict = bodyVerdict(ctx.contract, retry, res);
        t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? verdict.message : '');
      } finally {
        await dispose(t, data.batch_id);
      }
      const unknown = await ctx.call(await ctx.build(retry, { pathParams: { batch_id: '00000000-0000-4000-8000-000000000000' } }), { bodyValue: {} });
      t.assert(answer(t, unknown).status === 404, `an unknown batch: ${line(unknown.request, answer(t, unknown), 200)}`);
    }),

    check('B6 retry puts the failed items back: {data: {batch_id, status: "pending", retried_sessions, message}}', async (t: T) => {
      if (!failedRun) t.skip('needs the failed batch of B4, which did not run here');
      const retry = ctx.contract.operation('retryBatchSessions');
      const ex = await ctx.call(await ctx.build(retry, { pathParams: { batch_id: failedRun.batchId } }), {
        bodyValue: { retry_failed_only: true, max_retries: 1 },
      });
      const res = answer(t, ex);
      t.assert(res.status === 200, `POST .../retry answered ${line(ex.request, res, 300)}`);
      const verdict = bodyVerdict(ctx.contract, retry, res);
      t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? verdict.message : '');
      const data = (res.json as { data: Record<string, any> }).data;
      t.equal({ batch_id: data.batch_id, retried_sessions: data.retried_sessions }, { batch_id: failedRun.batchId, retried_sessions: 1 }, 'data');
      // The retried item waits for a browser like a new one: on a server this small, another
      // check may hold it until the queue gives up again. Either way the batch ends once more.
      const b = await waitEnd(t, failedRun.batchId, BATCH_WAIT_MS);
      for (const s of b.sessions ?? []) if (typeof s.session_id === 'string') await endSession(s.session_id);
      t.equal(b.completed_requests + b.failed_requests, 1, 'completed_requests + failed_requests after the retry');
      t.note(`after the retry: ${b.status}${b.sessions?.[0]?.retry_count !== undefined ? `, retry_count ${b.sessions[0].retry_count}` : ''}`);
    }),

    check('B5 batch event data: batch_id, total_requests, completed_requests, failed_requests, status; the counts add up', async (t: T) => {
      const r = await completed(t);
      if ('problem' in r) t.fail(r.problem);
      const seen = [r, failedRun].filter((x): x is Ended => !!x?.event);
      if (seen.length === 0) {
        const rec = await receive();
        t.fail(`no batch event was observed${'problem' in rec ? `: ${rec.problem}` : ''}`);
      }
      for (const e of seen) expectEventData(t, e.event!, e.detail);
      t.note(seen.map((e) => `${e.event!.type} ${JSON.stringify(e.event!.data)}`).join('; '));
    }),
  ];
});
