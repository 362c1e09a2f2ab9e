// Task runs over real HTTP on real Chromium, the code in the real sandbox, outcomes through
// a real webhook receiver: what a run ends with. T4 (a v2 run's events carry its run_id, a
// legacy run's none), every field of the events validated against the contract, the cost
// being the session's credits, artifacts as signed links that download, failures with their
// type and line, hostile code that finds nothing of the server's (the sandbox's own tests
// cover memory and forks). Cancel, the queue and the run's session: run-sessions.test.ts;
// code stopped at max_duration: run-timeout.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../testing/harness.js';
import { call, deployedTask, startRunBench, TITLE_TASK, until } from './test-support.js';

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

  it('T4: a v2 run answers a run_id at once; task.completed carries it with every field; a legacy run carries none', { timeout: 180_000 }, async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    const url = `${fixtures.url}/site/form.html`;
    const started = await bench.run(taskId, { input_params: { url } });
    // This node has room and nothing waits: the run is its own from its insert, not queued.
    expect(started.status).toBe('running');
    expect(started.run_id).toMatch(/^[0-9a-f-]{36}$/);

    const done = await bench.ended(started.run_id);
    expect(done).toMatchObject({ run_id: started.run_id, status: 'success', result: { title: 'Form fixture' }, session_id: expect.any(String) });
    const event = await bench.eventOfRun(started.run_id);
    expect(event.type).toBe('task.completed');
    bench.expectSchema(event);
    const [execution] = await t.db.query<any>('SELECT * FROM task_executions WHERE run_id = $1', [started.run_id]);
    const [version] = await t.db.query<any>('SELECT id FROM task_versions WHERE task_id = $1 AND version = 1', [taskId]);
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
    expect(one.body.data).toMatchObject({
      id: execution.id,
      version: '1',
      status: 'success',
      output: JSON.stringify({ title: 'Form fixture' }),
      errorMessage: null,
    });

    // A legacy run (sync): the same outcome, and its event has no run_id.
    const legacy = await call(t, 'POST', '/v1/task/run', { taskId, inputs: { url } });
    expect(legacy.status, JSON.stringify(legacy.body)).toBe(200);
    expect(legacy.body.data).toMatchObject({ success: true, async: false, taskId, output: JSON.stringify({ title: 'Form fixture' }) });
    const legacyEvent = await until(
      async () => bench.eventsOf(legacy.body.data.executionResultId),
      (l) => l.length > 0,
    ).then((l) => l[0]);
    expect(legacyEvent.type).toBe('task.completed');
    expect(legacyEvent.data).not.toHaveProperty('run_id');
    bench.expectSchema(legacyEvent);

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
    const res = await bench.run(taskId, { input_params: { word: 'artifacts' }, sync: true });
    expect(res).toMatchObject({ status: 'success', result: { result: 42 } });
    const event = await bench.eventOfRun(res.run_id);
    bench.expectSchema(event);
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
    const started = await bench.run(taskId, { input_params: { url: `${fixtures.url}/site/form.html` } });
    const done = await bench.ended(started.run_id);
    expect(done.status).toBe('failure');
    expect(done.error).toMatch(/no order status on Form fixture/);
    const event = await bench.eventOfRun(started.run_id);
    expect(event.type).toBe('task.failed');
    bench.expectSchema(event);
    expect(event.data.error).toMatchObject({ type: 'automation_failure', message: expect.stringMatching(/line 3/), root_cause: expect.any(String) });
    expect(event.data).not.toHaveProperty('output');
    const [session] = await t.db.query<any>('SELECT status FROM sessions WHERE id = $1', [done.session_id]);
    expect(session.status).toBe('completed');
    const legacy = await call(t, 'GET', `/v1/task/${taskId}/executions?status=failure`);
    expect(legacy.body.data.results[0].errorMessage).toMatch(/no order status/);
  });

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
    const res = await bench.run(taskId, { sync: true });
    expect(res.status, JSON.stringify(res)).toBe('success');
    expect(res.result.found).toEqual([]);
    // The sandbox's environment is its own: not one variable of the server's.
    const leaked = Object.entries(res.result.env as Record<string, string>).filter(([k, v]) => process.env[k] === v);
    expect(leaked).toEqual([]);
    expect((await call(t, 'GET', '/healthz')).status).toBe(200);
  });
});
