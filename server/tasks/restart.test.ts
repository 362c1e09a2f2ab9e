// A server killed (SIGKILL) in the middle of a task run: at its next start the run is
// failed with system_error and task.failed is sent exactly once, with the run's id; the
// queue goes on (a run queued behind it runs). The server runs as a child process, so the
// kill is a real one.
import { mkdtempSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { withPostgresSchema } from '../store/pg-schema.js';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { backends, type Backend } from '../testing/harness.js';
import { b64, call, until } from './test-support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

// The task's own code (the user's program, in the sandbox): a run still going when the test acts.
const SLOW = `export default async function run(ctx: any) {
  await new Promise((r) => setTimeout(r, 120000));
  return 'late';
}
`;
const QUICK = `export default async function run(ctx: any) {
  return { ok: true };
}
`;

describe.each(backends)('a restart in the middle of a task run on %s', (backend: Backend) => {
  it('fails the run with system_error and task.failed, once', { timeout: 180_000 }, async () => {
    if (backend === 'postgres') await withPostgresSchema(process.env.DATABASE_URL!, 'test_task_restart', (url) => scenario(url));
    else await scenario(undefined);
  });
});

async function scenario(databaseUrl: string | undefined) {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-task-restart-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const receiver: Receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const servers: ChildServer[] = [];
  cleanups.push(async () => {
    for (const s of servers) {
      if (s.child.exitCode === null && s.child.signalCode === null) {
        s.child.kill('SIGKILL');
        await s.exited;
      }
    }
  });
  const start = async () => {
    const s = await startChildServer({ dataDir, apiKey, databaseUrl, env: { TASK_CONCURRENCY: '1' } });
    servers.push(s);
    return s;
  };

  const first = await start();
  const webhook = await call(first, 'POST', '/v1/webhooks', { url: receiver.url, subscribed_events: ['task.completed', 'task.failed', 'task.cancelled'] });
  expect(webhook.status).toBe(200);
  const deploy = async (source: string) => {
    const task = await call(first, 'POST', '/v1/task', { name: `t-${randomBytes(4).toString('hex')}`, language: 'typescript', code: b64(source) });
    await call(first, 'POST', `/v1/task/${task.body.data.id}/deploy`, { browserConfiguration: { recording: { active: false } } });
    return task.body.data.id as string;
  };
  const slow = await deploy(SLOW);
  const quick = await deploy(QUICK);
  const a = (await call(first, 'POST', `/v2/tasks/${slow}/run`, { input_params: {} })).body;
  await until(
    () => call(first, 'GET', `/v2/tasks/runs/${a.run_id}/status`).then((r) => r.body),
    (s) => s.status === 'running' && !!s.session_id,
    60_000,
  );
  // Queued behind it (TASK_CONCURRENCY 1): it must still run after the restart.
  const b = (await call(first, 'POST', `/v2/tasks/${quick}/run`, { input_params: {} })).body;
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await start();
  const failed = await until(
    () => call(second, 'GET', `/v2/tasks/runs/${a.run_id}/status`).then((r) => r.body),
    (s) => s.status !== 'running',
    30_000,
  );
  expect(failed).toMatchObject({ run_id: a.run_id, status: 'failure', error: expect.stringMatching(/server stopped/) });
  await until(
    () => call(second, 'GET', `/v2/tasks/runs/${b.run_id}/status`).then((r) => r.body),
    (s) => s.status === 'success',
    60_000,
  );
  const ofRun = (id: string) => receiver.received.map((r) => JSON.parse(r.body)).filter((e) => e.data.run_id === id);
  await until(
    async () => ofRun(a.run_id),
    (l) => l.length > 0,
    30_000,
  );
  const [event] = ofRun(a.run_id);
  expect(event).toMatchObject({ type: 'task.failed', data: { run_id: a.run_id, session_id: failed.session_id, error: { type: 'system_error' } } });
  await until(
    async () => ofRun(b.run_id),
    (l) => l.length > 0,
    30_000,
  );
  // Nothing of the killed run is left in the DATA_DIR.
  expect(await readdir(join(dataDir, 'task-runs')).catch(() => [])).toEqual([]);

  // A third start finds nothing more to fail: still exactly one event for the killed run.
  second.child.kill('SIGTERM');
  await second.exited;
  const third = await start();
  // Its recovery ran before it listened, and an event is written with its deliveries: had it
  // failed or run either again, a third event would be queued for the webhook by now.
  const deliveries = await call(third, 'GET', `/v1/webhooks/${webhook.body.id}/events?limit=100`);
  expect(deliveries.status).toBe(200);
  expect(new Set(deliveries.body.data.map((d: { event_id: string }) => d.event_id)).size).toBe(2);
  expect(ofRun(a.run_id)).toHaveLength(1);
  expect(ofRun(b.run_id)).toHaveLength(1);
  third.child.kill('SIGTERM');
  await third.exited;
}
