// Task runs over real HTTP on real Chromium, the code in the real sandbox, outcomes through
// a real webhook receiver: T4 (a v2 run's events carry its run_id, a legacy run's none),
// every field of the events validated against the contract, the cost being the session's
// credits, artifacts as signed links that download, the recording's link, failures with
// their type and line, cancel (running and queued), runs in an existing session and
// cleanup_sessions, the session built from the browserConfiguration, the queue within
// TASK_CONCURRENCY, hostile code that finds nothing of the server's (the sandbox's own tests
// cover memory and forks). Code stopped at max_duration: run-timeout.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../testing/harness.js';
import { b64, call, deployedTask, startRunBench, TITLE_TASK, until } from './test-support.js';
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

  const events = () => bench.events();
  const eventsOf = (executionId: string) => bench.eventsOf(executionId);
  const eventOfRun = (runId: string) => bench.eventOfRun(runId);
  const expectSchema = (e: Parameters<typeof bench.expectSchema>[0]) => bench.expectSchema(e);
  const run = (taskId: string, body?: Record<string, unknown>) => bench.run(taskId, body);
  const status = (runId: string) => bench.status(runId);
  const ended = (runId: string) => bench.ended(runId);

  it('T4: a v2 run answers a run_id at once; task.completed carries it with every field; a legacy run carries none', { timeout: 180_000 }, async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    const url = `${fixtures.url}/site/form.html`;
    const started = await run(taskId, { input_params: { url } });
    // This node has room and nothing waits: the run is its own from its insert, not queued.
    expect(started.status).toBe('running');
    expect(started.run_id).toMatch(/^[0-9a-f-]{36}$/);

    const done = await ended(started.run_id);
    expect(done).toMatchObject({ run_id: started.run_id, status: 'success', result: { title: 'Form fixture' }, session_id: expect.any(String) });
    const event = await eventOfRun(started.run_id);
    expect(event.type).toBe('task.completed');
    expectSchema(event);
    const [execution] = await t.db.query<any>('SELECT * FROM task_executions WHERE run_id = $1', [started.run_id]);
    const [version] = await t.db.query<any>("SELECT id FROM task_versions WHERE task_id = $1 AND version = 1", [taskId]);
    expect(event.data).toMatchObject({
      task_id: taskId,
      task_version_id: version.id,
      execution_id: execution.id,
      run_id: started.run_id,
      session_id: done.session_id,
      execution_mode: 'deterministic',
      output: { value: { title: 'Form fixture' } },
      artifacts: [],
      session_dashboard_url: `${t.config.publicUrl}/v1/sessions/${done.session_id}`,
    });
    expect(event.data.duration_ms).toBeGreaterThan(0);
    // The cost is the run's session's credits, settled when the run ended it.
    const [session] = await t.db.query<any>('SELECT status, credits_used FROM sessions WHERE id = $1', [done.session_id]);
    expect(session.status).toBe('completed');
    expect(session.credits_used).toBeGreaterThan(0);
    expect(event.data.cost).toEqual({ amount: session.credits_used, currency: 'credits' });
    expect(event.data).not.toHaveProperty('recording_url');

    // The execution as the legacy family shows it.
    const one = await call(t, 'GET', `/v1/task/${taskId}/executions/${execution.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toMatchObject({ id: execution.id, version: '1', status: 'success', output: JSON.stringify({ title: 'Form fixture' }), errorMessage: null });

    // A legacy run (sync): the same outcome, and its event has no run_id.
    const legacy = await call(t, 'POST', '/v1/task/run', { taskId, inputs: { url } });
    expect(legacy.status, JSON.stringify(legacy.body)).toBe(200);
    expect(legacy.body.data).toMatchObject({ success: true, async: false, taskId, output: JSON.stringify({ title: 'Form fixture' }) });
    const legacyEvent = await until(async () => eventsOf(legacy.body.data.executionResultId), (l) => l.length > 0).then((l) => l[0]);
    expect(legacyEvent.type).toBe('task.completed');
    expect(legacyEvent.data).not.toHaveProperty('run_id');
    expectSchema(legacyEvent);

    const list = await call(t, 'GET', `/v1/task/${taskId}/executions?status=success`);
    expect(list.body.data.pagination.total).toBe(2);
  });

  it('sync waits for the end; ctx.input, the log and artifacts: signed links that download, and refuse a forged signature', { timeout: 120_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  ctx.log.info('saving', ctx.input.word);
  await ctx.artifacts.save('note.txt', Buffer.from('hello ' + ctx.input.word), 'text/plain');
  const shot = await ctx.page.screenshot();
  await ctx.artifacts.save('page.png', shot, 'image/png');
  return 42;
}
`;
    const taskId = await deployedTask(t, source, NO_RECORDING);
    const res = await run(taskId, { input_params: { word: 'artifacts' }, sync: true });
    expect(res).toMatchObject({ status: 'success', result: { result: 42 } });
    const event = await eventOfRun(res.run_id);
    expectSchema(event);
    const artifacts = event.data.artifacts as { name: string; url: string; size: number; content_type: string }[];
    expect(artifacts.map((a) => a.name).sort()).toEqual(['note.txt', 'page.png']);
    const note = artifacts.find((a) => a.name === 'note.txt')!;
    expect(note).toMatchObject({ size: 'hello artifacts'.length, content_type: 'text/plain' });
    const download = await fetch(note.url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('text/plain');
    expect(await download.text()).toBe('hello artifacts');
    const png = Buffer.from(await (await fetch(artifacts.find((a) => a.name === 'page.png')!.url)).arrayBuffer());
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    const forged = new URL(note.url);
    forged.searchParams.set('signature', 'A'.repeat(43));
    expect((await fetch(forged)).status).toBe(403);
    const expired = new URL(note.url);
    expired.searchParams.set('expires', '1000');
    expect((await fetch(expired)).status).toBe(403);
    const [execution] = await t.db.query<any>('SELECT logs FROM task_executions WHERE run_id = $1', [res.run_id]);
    expect(JSON.stringify(execution.logs)).toContain('saving');
    // Nothing of the run is left in the DATA_DIR's work area.
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(`${t.dataDir}/task-runs`).catch(() => [])).toEqual([]);
  });

  it('failures: a thrown error is automation_failure with its line; the session is ended; task.failed validates', { timeout: 120_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  throw new Error('no order status on ' + (await ctx.page.title()));
}
`;
    const taskId = await deployedTask(t, source, NO_RECORDING);
    const started = await run(taskId, { input_params: { url: `${fixtures.url}/site/form.html` } });
    const done = await ended(started.run_id);
    expect(done.status).toBe('failure');
    expect(done.error).toMatch(/no order status on Form fixture/);
    const event = await eventOfRun(started.run_id);
    expect(event.type).toBe('task.failed');
    expectSchema(event);
    expect(event.data.error).toMatchObject({ type: 'automation_failure', message: expect.stringMatching(/line 3/), root_cause: expect.any(String) });
    expect(event.data).not.toHaveProperty('output');
    const [session] = await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [done.session_id]);
    expect(session.status).toBe('completed');
    const legacy = await call(t, 'GET', `/v1/task/${taskId}/executions?status=failure`);
    expect(legacy.body.data.results[0].errorMessage).toMatch(/no order status/);
  });

  // A minute of waiting for max_duration (idle, not the database's work): once, not on every backend.
  it("hostile code finds neither the server's environment nor its files; the server keeps serving", { timeout: 120_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  const fs = await import('node:fs');
  const found: string[] = [];
  for (const p of ['/etc/passwd', ${JSON.stringify(t.dataDir)}]) {
    try { fs.readdirSync(p); found.push(p); } catch {}
    try { fs.readFileSync(p); found.push(p); } catch {}
  }
  return { found, env: { ...process.env } };
}
`;
    const taskId = await deployedTask(t, source, NO_RECORDING);
    const res = await run(taskId, { sync: true });
    expect(res.status, JSON.stringify(res)).toBe('success');
    expect(res.result.found).toEqual([]);
    // The sandbox's environment is its own: not one variable of the server's.
    const leaked = Object.entries(res.result.env as Record<string, string>).filter(([k, v]) => process.env[k] === v);
    expect(leaked).toEqual([]);
    expect((await call(t, 'GET', '/healthz')).status).toBe(200);
  });

  it('cancel: a running run stops with task.cancelled; a queued run is cancelled before it starts; an ended run answers 409', { timeout: 120_000 }, async () => {
    const slow = `export default async function run(ctx: any) {
  await new Promise((r) => setTimeout(r, 120000));
  return 'late';
}
`;
    const taskId = await deployedTask(t, slow, NO_RECORDING);
    // TASK_CONCURRENCY is 2: the third waits in the queue.
    const a = await run(taskId);
    const b = await run(taskId);
    await until(() => status(a.run_id), (s) => s.status === 'running' && !!s.session_id);
    await until(() => status(b.run_id), (s) => s.status === 'running');
    expect([a.status, b.status]).toEqual(['running', 'running']);
    const c = await run(taskId);
    expect(c.status).toBe('queued');
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await status(c.run_id)).status).toBe('queued');

    const queued = await call(t, 'POST', `/v2/tasks/runs/${c.run_id}/cancel`);
    expect(queued.status, JSON.stringify(queued.body)).toBe(200);
    expect(queued.body).toEqual({ run_id: c.run_id, status: 'cancelled' });
    const queuedEvent = await eventOfRun(c.run_id);
    expect(queuedEvent.type).toBe('task.cancelled');
    expectSchema(queuedEvent);
    expect(queuedEvent.data).not.toHaveProperty('session_id');

    const cancelled = await call(t, 'POST', `/v2/tasks/runs/${a.run_id}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body).toMatchObject({ run_id: a.run_id, status: 'cancelled', session_id: expect.any(String) });
    const event = await eventOfRun(a.run_id);
    expect(event.type).toBe('task.cancelled');
    expectSchema(event);
    expect(event.data).toMatchObject({ run_id: a.run_id, session_id: cancelled.body.session_id, execution_mode: 'deterministic' });
    expect(event.data).not.toHaveProperty('output');
    await until(async () => (await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [cancelled.body.session_id]))[0].status, (s) => s === 'completed');

    expect((await call(t, 'POST', `/v2/tasks/runs/${a.run_id}/cancel`)).status).toBe(409);
    expect((await call(t, 'POST', `/v2/tasks/runs/${c.run_id}/cancel`)).status).toBe(409);
    expect((await call(t, 'POST', `/v2/tasks/runs/${b.run_id}/cancel`)).status).toBe(200);
    await eventOfRun(b.run_id);
    // One event a run.
    for (const id of [a.run_id, b.run_id, c.run_id]) expect(events().filter((e) => e.data.run_id === id)).toHaveLength(1);
  });

  it('a run asked of a node with room is claimed by it in its insert, unless runs wait in the queue (then it queues behind them)', async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    const [v] = await t.db.query<{ id: string; project_id: string }>('SELECT id, project_id FROM task_versions WHERE task_id = $1 AND version = 1', [taskId]);
    const [key] = await t.db.query<{ id: string }>('SELECT id FROM api_keys WHERE project_id = $1 LIMIT 1', [v.project_id]);
    const e: queue.NewExecution = { projectId: v.project_id, apiKeyId: key.id, taskId, versionId: v.id, versionLabel: '1', input: {}, browserConfiguration: {}, cleanupSessions: true };
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

  it('runs in an existing session and leaves it running; cleanup_sessions false keeps the run\'s own session', { timeout: 120_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  return { url: ctx.page.url(), pages: ctx.context.pages().length };
}
`;
    const taskId = await deployedTask(t, source, NO_RECORDING);
    const session = await call(t, 'POST', '/v1/sessions', { session: { initial_url: `${fixtures.url}/site/form.html`, recording: { active: false } } });
    expect(session.status).toBe(200);
    const sessionId = session.body.data.id as string;
    const inSession = await run(taskId, { session_id: sessionId, sync: true });
    expect(inSession).toMatchObject({ status: 'success', session_id: sessionId, result: { url: `${fixtures.url}/site/form.html` } });
    expect((await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [sessionId]))[0].status).toBe('running');
    const event = await eventOfRun(inSession.run_id);
    expectSchema(event);
    expect(event.data.cost.amount).toBeGreaterThan(0);

    const kept = await run(taskId, { cleanup_sessions: false, sync: true });
    expect(kept.status).toBe('success');
    expect(kept.session_id).not.toBe(sessionId);
    expect((await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [kept.session_id]))[0].status).toBe('running');
    for (const id of [sessionId, kept.session_id!]) expect((await call(t, 'DELETE', `/v1/sessions/${id}`)).status).toBe(200);

    // A session that is not running is refused before anything is queued.
    expect((await call(t, 'POST', `/v2/tasks/${taskId}/run`, { input_params: {}, session_id: sessionId })).status).toBe(404);
  });

  it('the run\'s session follows the browserConfiguration: initial_url, tags, recording with its recording_url', { timeout: 150_000 }, async () => {
    const source = `export default async function run(ctx: any) {
  return { url: ctx.page.url(), title: await ctx.page.title() };
}
`;
    const url = `${fixtures.url}/site/script-rendered.html`;
    const taskId = await deployedTask(t, source, { initial_url: url, tags: ['nightly', 'task'], recording: { active: true }, timeout: { max_duration: 2, idle_timeout: 1 } });
    const res = await run(taskId, { sync: true });
    expect(res).toMatchObject({ status: 'success', result: { url, title: 'Script-rendered fixture' } });
    const [session] = await t.db.query<any>('SELECT tags, configuration FROM sessions WHERE id = $1', [res.session_id]);
    expect(session.tags).toEqual(['nightly', 'task']);
    expect(session.configuration.session.timeout).toEqual({ max_duration: 2, idle_timeout: 1 });
    const event = await eventOfRun(res.run_id);
    expectSchema(event);
    expect(event.data.recording_url).toMatch(/^http/);
    const video = await fetch(event.data.recording_url);
    expect(video.status).toBe(200);
    expect(video.headers.get('content-type')).toBe('video/mp4');
    expect((await video.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });
});
