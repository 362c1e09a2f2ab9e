// Task runs over real HTTP on real Chromium, the code in the real sandbox, outcomes through
// a real webhook receiver: the queue and the run's session. Cancel (running and queued) with
// the queue within TASK_CONCURRENCY, a run claimed by its node in its insert, runs in an
// existing session and cleanup_sessions, the session built from the browserConfiguration
// (its recording's link). What a run ends with (events, artifacts, failures, hostile code):
// runs.test.ts; code stopped at max_duration: run-timeout.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../testing/harness.js';
import { call, deployedTask, startRunBench, TITLE_TASK, until } from './test-support.js';
import * as queue from './queue-store.js';

const NO_RECORDING = { recording: { active: false } };

describe.each(backends)('task runs on %s', (backend) => {
  let bench: Awaited<ReturnType<typeof startRunBench>>;
  let t: typeof bench.t;
  let fixtures: typeof bench.fixtures;

  beforeAll(async () => {
    bench = await startRunBench(backend, { TASK_CONCURRENCY: '2', MAX_CONCURRENT_BROWSERS: '4' });
    ({ t, fixtures } = bench);
  }, 60_000);
  afterAll(async () => {
    await bench?.close();
  });

  it(
    'cancel: a running run stops with task.cancelled; a queued run is cancelled before it starts; an ended run answers 409',
    { timeout: 120_000 },
    async () => {
      // The task's own code (the user's program, in the sandbox): runs still going when cancelled.
      const slow = `export default async function run(ctx: any) {
  await new Promise((r) => setTimeout(r, 120000));
  return 'late';
}
`;
      const taskId = await deployedTask(t, slow, NO_RECORDING);
      // TASK_CONCURRENCY is 2: the third waits in the queue.
      const a = await bench.run(taskId);
      const b = await bench.run(taskId);
      await until(
        () => bench.status(a.run_id),
        (s) => s.status === 'running' && !!s.session_id,
      );
      await until(
        () => bench.status(b.run_id),
        (s) => s.status === 'running',
      );
      expect([a.status, b.status]).toEqual(['running', 'running']);
      const c = await bench.run(taskId);
      expect(c.status).toBe('queued');
      // A check that nothing happens, so a wait, not an event: no event tells that a pass of the
      // worker left c alone. With runs in flight it passes every 200 ms (BUSY_TICK_MS in
      // worker.ts), so 1.5 s is several passes: a worker that would claim past TASK_CONCURRENCY
      // has claimed c by then.
      await new Promise((r) => setTimeout(r, 1_500));
      expect((await bench.status(c.run_id)).status).toBe('queued');

      const queued = await call(t, 'POST', `/v2/tasks/runs/${c.run_id}/cancel`);
      expect(queued.status, JSON.stringify(queued.body)).toBe(200);
      expect(queued.body).toEqual({ run_id: c.run_id, status: 'cancelled' });
      const queuedEvent = await bench.eventOfRun(c.run_id);
      expect(queuedEvent.type).toBe('task.cancelled');
      bench.expectSchema(queuedEvent);
      expect(queuedEvent.data).not.toHaveProperty('session_id');

      const cancelled = await call(t, 'POST', `/v2/tasks/runs/${a.run_id}/cancel`);
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
      expect(cancelled.body).toMatchObject({ run_id: a.run_id, status: 'cancelled', session_id: expect.any(String) });
      const event = await bench.eventOfRun(a.run_id);
      expect(event.type).toBe('task.cancelled');
      bench.expectSchema(event);
      expect(event.data).toMatchObject({ run_id: a.run_id, session_id: cancelled.body.session_id, execution_mode: 'deterministic' });
      expect(event.data).not.toHaveProperty('output');
      await until(
        async () => (await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [cancelled.body.session_id]))[0].status,
        (s) => s === 'completed',
      );

      expect((await call(t, 'POST', `/v2/tasks/runs/${a.run_id}/cancel`)).status).toBe(409);
      expect((await call(t, 'POST', `/v2/tasks/runs/${c.run_id}/cancel`)).status).toBe(409);
      expect((await call(t, 'POST', `/v2/tasks/runs/${b.run_id}/cancel`)).status).toBe(200);
      await bench.eventOfRun(b.run_id);
      // One event a run.
      for (const id of [a.run_id, b.run_id, c.run_id]) expect(bench.events().filter((e) => e.data.run_id === id)).toHaveLength(1);
    },
  );

  it('a run asked of a node with room is claimed by it in its insert, unless runs wait in the queue (then it queues behind them)', async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    const [v] = await t.db.query<{ id: string; project_id: string }>('SELECT id, project_id FROM task_versions WHERE task_id = $1 AND version = 1', [taskId]);
    const [key] = await t.db.query<{ id: string }>('SELECT id FROM api_keys WHERE project_id = $1 LIMIT 1', [v.project_id]);
    const e: queue.NewExecution = {
      projectId: v.project_id,
      apiKeyId: key.id,
      taskId,
      versionId: v.id,
      versionLabel: '1',
      input: {},
      browserConfiguration: {},
      cleanupSessions: true,
    };
    // In a transaction rolled back at the end: this server's worker never sees these rows.
    const rollback = new Error('rollback');
    await t.db
      .transaction(async (tx) => {
        const first = await queue.enqueue(tx, e, 'node-a');
        expect(first).toMatchObject({ status: 'running', claimed_by: 'node-a' });
        expect(first.started_at).not.toBeNull();
        const waiting = await queue.enqueue(tx, e);
        expect(waiting).toMatchObject({ status: 'queued', claimed_by: null, started_at: null });
        expect(await queue.enqueue(tx, e, 'node-a')).toMatchObject({ status: 'queued', claimed_by: null });
        throw rollback;
      })
      .catch((err: unknown) => {
        if (err !== rollback) throw err;
      });
  });

  it("runs in an existing session and leaves it running; cleanup_sessions false keeps the run's own session", { timeout: 120_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  return { url: ctx.page.url(), pages: ctx.context.pages().length };
}
`;
    const taskId = await deployedTask(t, source, NO_RECORDING);
    const session = await call(t, 'POST', '/v1/sessions', { session: { initial_url: `${fixtures.url}/site/form.html`, recording: { active: false } } });
    expect(session.status).toBe(200);
    const sessionId = session.body.data.id as string;
    const inSession = await bench.run(taskId, { session_id: sessionId, sync: true });
    expect(inSession).toMatchObject({ status: 'success', session_id: sessionId, result: { url: `${fixtures.url}/site/form.html` } });
    expect((await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [sessionId]))[0].status).toBe('running');
    const event = await bench.eventOfRun(inSession.run_id);
    bench.expectSchema(event);
    expect(event.data.cost.amount).toBeGreaterThan(0);

    const kept = await bench.run(taskId, { cleanup_sessions: false, sync: true });
    expect(kept.status).toBe('success');
    expect(kept.session_id).not.toBe(sessionId);
    expect((await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [kept.session_id]))[0].status).toBe('running');
    for (const id of [sessionId, kept.session_id!]) expect((await call(t, 'DELETE', `/v1/sessions/${id}`)).status).toBe(200);

    // A session that is not running is refused before anything is queued.
    expect((await call(t, 'POST', `/v2/tasks/${taskId}/run`, { input_params: {}, session_id: sessionId })).status).toBe(404);
  });

  it("the run's session follows the browserConfiguration: initial_url, tags, recording with its recording_url", { timeout: 150_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  return { url: ctx.page.url(), title: await ctx.page.title() };
}
`;
    const url = `${fixtures.url}/site/script-rendered.html`;
    const taskId = await deployedTask(t, source, {
      initial_url: url,
      tags: ['nightly', 'task'],
      recording: { active: true },
      timeout: { max_duration: 2, idle_timeout: 1 },
    });
    const res = await bench.run(taskId, { sync: true });
    expect(res).toMatchObject({ status: 'success', result: { url, title: 'Script-rendered fixture' } });
    const [session] = await t.db.query<any>('SELECT tags, configuration FROM sessions WHERE id = $1', [res.session_id]);
    expect(session.tags).toEqual(['nightly', 'task']);
    expect(session.configuration.session.timeout).toEqual({ max_duration: 2, idle_timeout: 1 });
    const event = await bench.eventOfRun(res.run_id);
    bench.expectSchema(event);
    expect(event.data.recording_url).toMatch(/^http/);
    const video = await fetch(event.data.recording_url);
    expect(video.status).toBe(200);
    expect(video.headers.get('content-type')).toBe('video/mp4');
    expect((await video.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });
});
