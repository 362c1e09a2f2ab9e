// A task run whose code never ends is stopped at its max_duration and reported as a timeout.
// A file of its own, beside runs.test.ts: the contract's max_duration is in minutes, so this
// test waits a real minute for the server's own timer, while the other run tests run beside it.
// Once, on the first backend: the timer and the sandbox's stop are the subject, not the
// database (runs.test.ts covers the run's rows and events on both).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends } from '../testing/harness.js';
import { call, deployedTask, startRunBench, until } from './test-support.js';

describe(`task runs on ${backends[0]}`, () => {
  let bench: Awaited<ReturnType<typeof startRunBench>>;

  beforeAll(async () => {
    bench = await startRunBench(backends[0], { TASK_CONCURRENCY: '2', MAX_CONCURRENT_BROWSERS: '4' });
  }, 60_000);
  afterAll(async () => {
    await bench?.close();
  });

  it('timeout: code that loops forever is stopped at max_duration and reported as timeout, before its session would end', { timeout: 150_000 }, async () => {
    const { t, fixtures } = bench;
    // A loop that never gives the event loop back (so only a stop from outside ends it),
    // asleep in Atomics.wait rather than spinning: a spinning one held a core for the minute.
    const source = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (;;) Atomics.wait(cell, 0, 0, 1000);
}
`;
    const taskId = await deployedTask(t, source, { recording: { active: false }, timeout: { max_duration: 1, idle_timeout: 2 } });
    const started = await bench.run(taskId, { input_params: { url: `${fixtures.url}/site/form.html` } });
    const done = await until(
      () => bench.status(started.run_id),
      (s) => !['queued', 'running'].includes(s.status),
      120_000,
      1_000,
    );
    expect(done.status).toBe('timeout');
    const event = await bench.eventOfRun(started.run_id);
    expect(event.type).toBe('task.failed');
    bench.expectSchema(event);
    expect(event.data.error.type).toBe('timeout');
    expect(event.data.duration_ms).toBeGreaterThan(50_000);
    expect(event.data.duration_ms).toBeLessThan(62_000);
    expect((await call(t, 'GET', '/healthz')).status).toBe(200);
  });
});
