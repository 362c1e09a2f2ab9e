// POST /v1/batch-sessions/{batch_id}/retry: the failed items of a batch go back through the
// same queue and worker, counted in the batch's progress, and the batch ends again with its
// event. Over real HTTP on real Chromium (headless, recording off): items a queue timeout
// failed, then retried into running sessions; items whose browser cannot start, retried up
// to max_retries times each. The store's side, with a retry while the batch still runs and
// one racing an item's outcome: on the database alone, driving the worker's steps by hand.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { migrate } from '../store/migrate.js';
import { openDb, type Db } from '../store/db.js';
import { backends, sharedPostgresSchema } from '../testing/harness.js';
import { openTestPglite } from '../testing/pglite-template.js';
import * as store from './store.js';
import { createSignals } from '../capability/index.js';
import { batchEnd, batchEvents, call, createBatch, expectValid, getBatch, serverPerTest } from './test-support.js';

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };

describe.each(backends)('retrying a batch on %s', (backend) => {
  const start = serverPerTest(backend);

  it('re-creates the items a queue timeout failed: they run, and the batch completes with a second event', async () => {
    const t = await start({ MAX_CONCURRENT_BROWSERS: '1', BATCH_QUEUE_TIMEOUT_SECONDS: '2' });
    // The one browser the server may run is taken: the item waits out its queue deadline.
    const busy = await call(t, 'POST', '/v1/sessions', HEADLESS);
    expect(busy.status).toBe(200);
    const id = await createBatch(t, { count: 1, configuration: HEADLESS });
    const failed = await batchEnd(t, id);
    expect(failed).toMatchObject({ status: 'failed', failed_requests: 1 });
    expect(failed.sessions[0]).toMatchObject({ status: 'failed', retry_count: 0 });

    const retry = (body: unknown, headers?: Record<string, string>) => call(t, 'POST', `/v1/batch-sessions/${id}/retry`, body, headers);
    for (const bad of [{ max_retries: 0 }, { max_retries: 4 }, { max_retries: 1.5 }, { retry_failed_only: 'yes' }, { again: true }]) {
      const res = await retry(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    const everything = await retry({ retry_failed_only: false });
    expect(everything.status).toBe(400);
    expect(everything.body.error.message).toMatch(/retry_failed_only: false is not offered/);
    const other = await createProject(t.db, { name: 'other', source: 'test' });
    expect((await retry({}, { 'service-api-key': other.key })).status).toBe(404);
    expect((await call(t, 'POST', `/v1/batch-sessions/${randomUUID()}/retry`, {})).status).toBe(404);
    // None of the refusals touched the batch.
    expect(await getBatch(t, id)).toMatchObject({ status: 'failed', failed_requests: 1 });

    await call(t, 'DELETE', `/v1/sessions/${busy.body.data.id}`);
    // No body at all: the defaults (failed items only, one attempt each).
    const res = await call(t, 'POST', `/v1/batch-sessions/${id}/retry`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ data: { batch_id: id, status: 'pending', retried_sessions: 1, message: '1 failed session is queued again, one attempt each' } });
    const pending = await getBatch(t, id);
    expect(pending).toMatchObject({ completed_at: null, failed_requests: 0 });

    const done = await batchEnd(t, id);
    expectValid('BatchDetail', { data: done });
    expect(done).toMatchObject({ status: 'completed', completed_requests: 1, failed_requests: 0, pending_requests: 0, progress: 100 });
    expect(done.sessions[0]).toMatchObject({ status: 'completed', error: null, retry_count: 1, cdp_url: expect.stringMatching(/^ws:/) });
    expect((await call(t, 'GET', `/v1/sessions/${done.sessions[0].session_id}`)).body.data.status).toBe('running');
    const events = await batchEvents(t, id);
    expect(events.map((e) => e.type)).toEqual(['batch.failed', 'batch.completed']);
    expect(events[1].data).toEqual({ batch_id: id, total_requests: 1, completed_requests: 1, failed_requests: 0, status: 'completed' });

    const nothing = await retry({});
    expect(nothing.status).toBe(400);
    expect(nothing.body.error.message).toBe('No failed sessions to retry');
  });

  it('tries each failed item up to max_retries times, then counts it failed with its last error', async () => {
    const t = await start({ CHROMIUM_PATH: '/bin/false' });
    const id = await createBatch(t, { count: 2, configuration: HEADLESS });
    expect(await batchEnd(t, id)).toMatchObject({ status: 'failed', failed_requests: 2 });
    const res = await call(t, 'POST', `/v1/batch-sessions/${id}/retry`, { retry_failed_only: true, max_retries: 3 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ retried_sessions: 2, message: '2 failed sessions are queued again, up to 3 attempts each' });
    const done = await batchEnd(t, id);
    expect(done).toMatchObject({ status: 'failed', completed_requests: 0, failed_requests: 2, pending_requests: 0 });
    for (const item of done.sessions) {
      expect(item).toMatchObject({ status: 'failed', retry_count: 3, session_id: null });
      expect(item.error).toMatch(/could not be started/);
    }
    // Every attempt was a session of its own: 2 at first, then 3 for each item.
    expect(await t.db.query('SELECT 1 FROM sessions WHERE batch_id = $1', [id])).toHaveLength(8);
    expect((await batchEvents(t, id)).map((e) => e.type)).toEqual(['batch.failed', 'batch.failed']);
  });
});

describe.each(backends)('the store of batch retries on %s', (backend) => {
  let db: Db;
  let drop: (() => Promise<void>) | undefined;
  let projectId: string;
  /** This store's own signals, as a server's (no worker hears them here). */
  const signals = createSignals();
  beforeAll(async () => {
    if (backend === 'postgres') {
      const schema = await sharedPostgresSchema();
      drop = schema.drop;
      db = await openDb({ databaseUrl: schema.url });
      await migrate(db);
    } else {
      db = await openTestPglite();
    }
    projectId = (await createProject(db, { name: 'retries', source: 'test' })).projectId;
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  const newBatch = (count: number) =>
    store.createBatch(db, { id: randomUUID(), projectId, apiKeyId: 'k', count, configuration: {}, metadata: {}, queueTimeoutSeconds: 60 });
  const counts = async (id: string) => {
    const b = (await store.getBatch(db, projectId, id))!;
    return { status: b.status, completed: b.completed_requests, failed: b.failed_requests };
  };
  const events = (id: string) => db.query<{ type: string }>(`SELECT type FROM events WHERE data->>'batch_id' = $1 ORDER BY seq`, [id]);

  it('retries what failed while the batch runs; items in flight count as they finish; one event at the end', async () => {
    const b = await newBatch(3);
    const [a, c, d] = await store.claimItems(db, 'node-a', 3);
    await store.finishItem(db, signals, a, { status: 'failed', error: 'first' });
    const r = await store.retryBatch(db, projectId, b.id, { attempts: 2, queueTimeoutSeconds: 60 });
    expect(r).toMatchObject({ retried: 1, batch: { status: 'pending', failed_requests: 0 } });
    // The items still being created were left alone.
    await store.finishItem(db, signals, c, { status: 'completed' });
    await store.finishItem(db, signals, d, { status: 'failed', error: 'second' });
    expect(await counts(b.id)).toEqual({ status: 'pending', completed: 1, failed: 1 });
    // The retried item fails once (one attempt left: back in the queue), then succeeds.
    const [again] = await store.claimItems(db, 'node-a', 5);
    expect(again).toMatchObject({ itemIndex: 0 });
    expect(again.sessionId).not.toBe(a.sessionId);
    await store.finishItem(db, signals, again, { status: 'failed', error: 'retry 1' });
    expect(await counts(b.id)).toEqual({ status: 'pending', completed: 1, failed: 1 });
    const [last] = await store.claimItems(db, 'node-a', 5);
    await store.finishItem(db, signals, last, { status: 'completed' });
    expect(await counts(b.id)).toEqual({ status: 'completed', completed: 2, failed: 1 });
    expect((await events(b.id)).map((e) => e.type)).toEqual(['batch.completed']);
    const items = await store.listItems(db, projectId, (await store.getBatch(db, projectId, b.id))!);
    expect(items.map((i) => [i.status, i.retry_count])).toEqual([
      ['completed', 2],
      ['completed', 0],
      ['failed', 0],
    ]);
  });

  it('a retry racing the last outcome: the counts add up and each end has its one event', async () => {
    for (let round = 0; round < 10; round++) {
      const b = await newBatch(2);
      const [x, y] = await store.claimItems(db, 'node-a', 2);
      await store.finishItem(db, signals, x, { status: 'failed', error: 'x' });
      const [retried] = await Promise.all([
        store.retryBatch(db, projectId, b.id, { attempts: 1, queueTimeoutSeconds: 60 }),
        store.finishItem(db, signals, y, { status: 'completed' }),
      ]);
      expect(retried).toMatchObject({ retried: 1 });
      // Whichever came first, item 0 waits again and the batch is pending with item 1 counted.
      expect(await counts(b.id)).toEqual({ status: 'pending', completed: 1, failed: 0 });
      const [z] = await store.claimItems(db, 'node-a', 2);
      await store.finishItem(db, signals, z, { status: 'failed', error: 'z' });
      expect(await counts(b.id)).toEqual({ status: 'completed', completed: 1, failed: 1 });
      // The last outcome may have ended the batch before the retry reopened it: then two ends.
      const types = (await events(b.id)).map((e) => e.type);
      expect(types.length === 1 || types.length === 2).toBe(true);
      expect(types.every((t) => t === 'batch.completed')).toBe(true);
    }
  });

  it('answers what cannot be retried: another project, a cancelled batch, nothing failed', async () => {
    const b = await newBatch(2);
    const other = await createProject(db, { name: 'other', source: 'test' });
    expect(await store.retryBatch(db, other.projectId, b.id, { attempts: 1, queueTimeoutSeconds: 60 })).toBe('not_found');
    expect(await store.retryBatch(db, projectId, b.id, { attempts: 1, queueTimeoutSeconds: 60 })).toBe('nothing_failed');
    await store.cancelBatch(db, projectId, b.id);
    expect(await store.retryBatch(db, projectId, b.id, { attempts: 1, queueTimeoutSeconds: 60 })).toBe('cancelled');
  });
});
