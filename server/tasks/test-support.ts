// Shared by the task tests (not a test itself): task code as the API takes it, a task with a
// deployed version in one call, and the bench the run tests run on.
import { expect } from 'vitest';
import { startFixtureServer } from '../../fixtures/server.js';
import type { VariableName } from '../config/config.js';
import { loadEventSchemas } from '../events/schema.js';
import { startReceiver } from '../events/test-support.js';
import { startTestServer, type Backend } from '../testing/harness.js';
import { call, until, type Requester } from '../batches/test-support.js';

export { call, until } from '../batches/test-support.js';

export const b64 = (source: string) => Buffer.from(source, 'utf8').toString('base64');

/** Opens `input.url` and answers the page title. */
export const TITLE_TASK = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  return { title: await ctx.page.title() };
}
`;

export async function createTask(server: Requester, body: Record<string, unknown> = {}): Promise<string> {
  const res = await call(server, 'POST', '/v1/task', { name: `t-${Math.random().toString(36).slice(2, 10)}`, language: 'typescript', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.id as string;
}

/** A task whose version 1 is `source`; answers the task id. */
export async function deployedTask(server: Requester, source: string, browserConfiguration: Record<string, unknown> = {}): Promise<string> {
  const id = await createTask(server);
  const res = await call(server, 'POST', `/v1/task/${id}/deploy`, { code: b64(source), language: 'typescript', browserConfiguration });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return id;
}

/** An event a webhook receiver took, parsed. */
export interface ReceivedEvent {
  id: string;
  type: string;
  data: any;
}

/**
 * A server with task runs, the fixture site, and a webhook receiver subscribed to the task
 * events, with what the run tests ask of them. The server's log is kept, and shown when a
 * run does not end in time (what it was doing meanwhile).
 */
export async function startRunBench(backend: Backend, env: Partial<Record<VariableName, string>>) {
  const fixtures = await startFixtureServer();
  const receiver = await startReceiver();
  const logs: string[] = [];
  const t = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'debug', ...env } });
  const hook = await call(t, 'POST', '/v1/webhooks', { url: receiver.url, subscribed_events: ['task.completed', 'task.failed', 'task.cancelled'] });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  const schemas = loadEventSchemas();
  const events = (): ReceivedEvent[] => receiver.received.map((r) => JSON.parse(r.body) as ReceivedEvent);
  const status = async (runId: string) => (await call(t, 'GET', `/v2/tasks/runs/${runId}/status`)).body;
  return {
    t,
    fixtures,
    events,
    eventsOf: (executionId: string) => events().filter((e) => e.data.execution_id === executionId),
    eventOfRun: (runId: string) =>
      until(
        async () => events().filter((e) => e.data.run_id === runId),
        (l) => l.length > 0,
        60_000,
      ).then((l) => l[0]),
    expectSchema(e: ReceivedEvent) {
      const v = schemas.validator(e.type)!;
      expect(v(e), `${e.type}: ${JSON.stringify(v.errors)}`).toBe(true);
    },
    async run(taskId: string, body: Record<string, unknown> = {}) {
      const res = await call(t, 'POST', `/v2/tasks/${taskId}/run`, { input_params: {}, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body as { run_id: string; status: string; session_id?: string; result?: any; error?: string };
    },
    status,
    ended: (runId: string) =>
      until(
        () => status(runId),
        (s) => !['queued', 'running'].includes(s.status),
        90_000,
      ).catch((err: Error) => {
        const story = logs.filter((l) => !l.includes('"msg":"request"')).slice(-40);
        throw new Error(`${err.message}\nthe server's last words:\n${story.join('')}`);
      }),
    async close() {
      await t.close();
      await receiver.close();
      await fixtures.close();
    },
  };
}
