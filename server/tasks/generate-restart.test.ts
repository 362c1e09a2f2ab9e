// A server killed (SIGKILL) in the middle of a task's generation never leaves it generating:
// on PGlite its next start fails the generation, with a clear error (a SIGTERM fails it on
// the way out); on a cluster (PostgreSQL, two nodes) the other node answers the status from
// the database while the generation runs, and fails it once it claims the killed node dead.
// Real processes, a real kill, and a local model that is still "thinking" when it comes.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../llm/scripted-server.js';
import { sharedPostgresSchema } from '../testing/harness.js';
import { browsersDirFor, sweepOrphans } from '../browser/index.js';
import { testLog } from '../browser/test-support.js';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { freePort } from '../testing/free-port.js';
import { call, until } from './test-support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function thinkingModel(): Promise<ScriptedModelServer> {
  // Answers long after the kill: the generation is in flight when the server dies.
  const late = { delayMs: 120_000, toolCalls: [{ name: 'write_task', arguments: { code: 'export default async function run() {}' } }] };
  const model = await startScriptedModel([late, late]);
  cleanups.push(() => model.close());
  return model;
}

const modelEnv = (model: ScriptedModelServer) => ({ LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_MODEL: 'gpt-gen', LLM_IMAGES: 'false' });

function keep(s: ChildServer): ChildServer {
  cleanups.push(async () => {
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill('SIGKILL');
      await s.exited;
    }
  });
  return s;
}

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cb-task-generate-'));
  cleanups.push(async () => {
    // A node killed and not started again leaves its browsers (the warm pool's) as a real
    // crash does; the next start on the folder would sweep them, so the test does.
    await sweepOrphans(browsersDirFor(dir), testLog());
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

/** Starts a generation on `s` and waits until the model has been asked. */
async function generating(s: ChildServer, model: ScriptedModelServer): Promise<string> {
  const res = await call(s, 'POST', '/v2/tasks/generate', { name: `gen-${randomBytes(4).toString('hex')}`, description: 'd', user_task: 'Open a page.' });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  await until(
    async () => model.received.length,
    (n) => n > 0,
    30_000,
    50,
  );
  return res.body.id as string;
}

const statusOn = (s: ChildServer, id: string) => call(s, 'GET', `/v2/tasks/${id}/generation-status`).then((r) => r.body);

describe('a server killed during a task generation', () => {
  it('on PGlite: the generation is failed at the next start, with why; a stop fails it too', { timeout: 120_000 }, async () => {
    const model = await thinkingModel();
    const dir = dataDir();
    const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
    const first = keep(await startChildServer({ dataDir: dir, apiKey, env: modelEnv(model) }));
    const id = await generating(first, model);
    expect(await statusOn(first, id)).toEqual({ id, status: 'generating' });
    first.child.kill('SIGKILL');
    await first.exited;

    const second = keep(await startChildServer({ dataDir: dir, apiKey, env: modelEnv(model) }));
    // Its recovery ran before it listened.
    expect(await statusOn(second, id)).toEqual({
      id,
      status: 'failed',
      error: 'The server stopped during the generation (killed or crashed); generate the task again',
    });
    // Stopped (SIGTERM) during another: the stop fails it, saying so.
    const asked = model.received.length;
    const res = await call(second, 'POST', '/v2/tasks/generate', {
      name: `gen-${randomBytes(4).toString('hex')}`,
      description: 'd',
      user_task: 'Open a page.',
    });
    await until(
      async () => model.received.length,
      (n) => n > asked,
      30_000,
      50,
    );
    second.child.kill('SIGTERM');
    await second.exited;
    const third = keep(await startChildServer({ dataDir: dir, apiKey, env: modelEnv(model) }));
    expect(await statusOn(third, res.body.id)).toEqual({
      id: res.body.id,
      status: 'failed',
      error: 'The generation failed: The server stopped during the generation',
    });
    third.child.kill('SIGTERM');
    await third.exited;
  });

  it.runIf(process.env.DATABASE_URL)('on a cluster: another node answers the status, then fails it once the node is dead', { timeout: 120_000 }, async () => {
    const model = await thinkingModel();
    const schema = await sharedPostgresSchema();
    cleanups.push(() => schema.drop());
    const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
    const secretsKey = randomBytes(32).toString('hex');
    const env = { ...modelEnv(model), NODE_DEAD_AFTER_SECONDS: '3', CLUSTER_SECRET: randomBytes(24).toString('hex'), SECRETS_KEY: secretsKey };
    // One after the other: both would bootstrap the same key at once.
    const node = async (id: string) => {
      const port = await freePort();
      return keep(
        await startChildServer({
          dataDir: dataDir(),
          apiKey,
          databaseUrl: schema.url,
          port,
          env: { ...env, NODE_ID: id, NODE_INTERNAL_URL: `http://127.0.0.1:${port}` },
        }),
      );
    };
    const a = await node('gen-a');
    const b = await node('gen-b');
    const id = await generating(a, model);
    expect(await statusOn(b, id)).toEqual({ id, status: 'generating' });
    a.child.kill('SIGKILL');
    await a.exited;
    const failed = await until(
      () => statusOn(b, id),
      (s) => s.status !== 'generating',
      30_000,
    );
    expect(failed).toEqual({ id, status: 'failed', error: 'Node gen-a, which was generating the task, stopped; generate the task again' });
    b.child.kill('SIGTERM');
    await b.exited;
  });
});
