// Batch sessions over real HTTP on real Chromium (small, headless batches) whose items wait
// for capacity: within the concurrent-browser limit they wait up to the queue timeout, then
// fail with that reason, or take capacity freed meanwhile, and the batch ends as
// the contract derives it (B3, B4, B5); cancel of the waiting items, 404s, and the list.
// Creation, completion and the other refusals: batches.test.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { backends } from '../testing/harness.js';
import { batchEnd, batchEvents, call, createBatch, endAll, expectValid, getBatch, HEADLESS, until, serverPerTest } from './test-support.js';

describe.each(backends)('batch sessions on %s', (backend) => {
  const start = serverPerTest(backend);

  it('B4, B5: items wait for capacity up to the queue timeout, then fail with that reason; failed with batch.failed', async () => {
    const t = await start({ MAX_CONCURRENT_BROWSERS: '1', BATCH_QUEUE_TIMEOUT_SECONDS: '3' });
    // The one browser the server may run is taken.
    const busy = await call(t, 'POST', '/v1/sessions', HEADLESS);
    expect(busy.status).toBe(200);
    const started = Date.now();
    const id = await createBatch(t, { count: 2, configuration: HEADLESS });
    // That they still wait is an absence, which no event marks: look after the provisioner
    // has had several turns (it polls the queue every few hundred ms), well within the 3 s.
    await sleep(1500);
    const waiting = await getBatch(t, id);
    expect(waiting).toMatchObject({ status: 'pending', pending_requests: 2, completed_requests: 0, failed_requests: 0, progress: 0 });
    expect(waiting.sessions.every((s: any) => s.status === 'pending' && s.session_id === null)).toBe(true);

    const done = await batchEnd(t, id);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2500);
    expectValid('BatchDetail', { data: done });
    expect(done).toMatchObject({ status: 'failed', completed_requests: 0, failed_requests: 2, pending_requests: 0, progress: 100 });
    for (const item of done.sessions) {
      expect(item).toMatchObject({ status: 'failed', session_id: null, cdp_url: null, live_view_url: null });
      expect(item.error).toMatch(/queue timeout.*3 s/i);
    }
    const events = await batchEvents(t, id);
    expect(events.map((e) => e.type)).toEqual(['batch.failed']);
    expectValid('EventBatchFailedData', events[0].data);
    expect(events[0].data).toEqual({ batch_id: id, total_requests: 2, completed_requests: 0, failed_requests: 2, status: 'failed' });
    expect(await t.db.query('SELECT 1 FROM sessions WHERE batch_id = $1', [id])).toHaveLength(0);
  });

  it('B3, B5: one item running and one timed out is completed, counts adding up; capacity freed later is used', async () => {
    const t = await start({ MAX_CONCURRENT_BROWSERS: '1', BATCH_QUEUE_TIMEOUT_SECONDS: '10' });
    const busy = await call(t, 'POST', '/v1/sessions', HEADLESS);
    const id = await createBatch(t, { count: 2, configuration: HEADLESS });
    // An absence again (both still wait): the provisioner has had several turns by now.
    await sleep(1000);
    expect((await getBatch(t, id)).pending_requests).toBe(2);
    // Freed capacity goes to the first waiting item; the second then waits for its deadline.
    await call(t, 'DELETE', `/v1/sessions/${busy.body.data.id}`);
    const one = await until(
      () => getBatch(t, id),
      (b) => b.completed_requests === 1,
    );
    expect(one.sessions[0].status).toBe('completed');
    // The second never got the capacity, which the first kept: it timed out waiting (on a
    // loaded machine it may already have by the time the first is seen completed).
    const done = await batchEnd(t, id, 40_000);
    expect(done).toMatchObject({ status: 'completed', completed_requests: 1, failed_requests: 1 });
    expect(done.sessions[1]).toMatchObject({ status: 'failed', session_id: null });
    expect(done.sessions[1].error).toMatch(/queue timeout/i);
    const [event] = await batchEvents(t, id);
    expect(event.type).toBe('batch.completed');
    expect(event.data.completed_requests + event.data.failed_requests).toBe(event.data.total_requests);
  });

  it('cancels the waiting items; a second cancel is 409; other projects see 404', async () => {
    const t = await start({ MAX_CONCURRENT_BROWSERS: '1' });
    await call(t, 'POST', '/v1/sessions', HEADLESS);
    const id = await createBatch(t, { count: 3, configuration: HEADLESS });
    const cancelled = await call(t, 'DELETE', `/v1/batch-sessions/${id}`);
    expect(cancelled.status).toBe(200);
    expectValid('BatchCancelled', cancelled.body);
    expect(cancelled.body.data).toEqual({ batch_id: id, status: 'cancelled' });
    const b = await getBatch(t, id);
    expect(b).toMatchObject({ status: 'cancelled', pending_requests: 0, progress: 100, completed_requests: 0, failed_requests: 0 });
    expect(b.sessions.map((s: any) => s.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect(Date.parse(b.completed_at)).not.toBeNaN();
    const again = await call(t, 'DELETE', `/v1/batch-sessions/${id}`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe(409);
    // Nothing is provisioned once capacity frees, and no batch event is sent for a cancel.
    await endAll(t);
    // An absence (no session made, no event sent) after the provisioner's turns, as above.
    await sleep(1500);
    expect(await t.db.query('SELECT 1 FROM sessions WHERE batch_id = $1', [id])).toHaveLength(0);
    expect(await batchEvents(t, id)).toEqual([]);

    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await call(t, 'GET', `/v1/batch-sessions/${unknown}`)).status).toBe(404);
    expect((await call(t, 'DELETE', `/v1/batch-sessions/${unknown}`)).status).toBe(404);
    expect((await call(t, 'GET', '/v1/batch-sessions/not-a-uuid')).status).toBe(400);
    const other = await createProject(t.db, { name: 'other', source: 'test' });
    const asOther = { 'service-api-key': other.key };
    expect((await call(t, 'GET', `/v1/batch-sessions/${id}`, undefined, asOther)).status).toBe(404);
    expect((await call(t, 'DELETE', `/v1/batch-sessions/${id}`, undefined, asOther)).status).toBe(404);
    expect((await call(t, 'GET', '/v1/batch-sessions', undefined, asOther)).body.pagination.total).toBe(0);
  });

  it('lists batches newest first, by status, a page at a time', async () => {
    const t = await start({ MAX_CONCURRENT_BROWSERS: '1' });
    await call(t, 'POST', '/v1/sessions', HEADLESS);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(await createBatch(t, { count: 1 + i, configuration: HEADLESS, metadata: { i } }));
      await sleep(20); // distinct created_at values: the list's order is by them
    }
    await call(t, 'DELETE', `/v1/batch-sessions/${ids[1]}`);
    const all = await call(t, 'GET', '/v1/batch-sessions');
    expectValid('BatchList', all.body);
    expect(all.body.data.map((b: any) => b.batch_id)).toEqual([...ids].reverse());
    expect(all.body.data.map((b: any) => b.metadata)).toEqual([{ i: 2 }, { i: 1 }, { i: 0 }]);
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total: 3, total_pages: 1 });
    const page2 = await call(t, 'GET', '/v1/batch-sessions?limit=2&page=2');
    expect(page2.body.data.map((b: any) => b.batch_id)).toEqual([ids[0]]);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, total_pages: 2 });
    const cancelled = await call(t, 'GET', '/v1/batch-sessions?status=cancelled');
    expect(cancelled.body.data.map((b: any) => b.batch_id)).toEqual([ids[1]]);
    expect((await call(t, 'GET', '/v1/batch-sessions?status=bogus')).status).toBe(400);
    for (const id of [ids[0], ids[2]]) await call(t, 'DELETE', `/v1/batch-sessions/${id}`);
  });
});
