// Self-healing over real HTTP: real runs on real Chromium in the real sandbox, a local model
// server answering a scripted conversation (the script checks what the model was sent: the
// code, the error, a snapshot holding the page's real button), task.healed at a real webhook
// receiver validated against the contract, and the healed version run to completion.
// Healing off, no model configured, code that does not parse: no version, no event.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { loadEventSchemas } from '../events/schema.js';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { startScriptedModel, type ScriptedModelServer } from '../llm/scripted-server.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { b64, call, until } from './test-support.js';

const schemas = loadEventSchemas();
const NO_RECORDING = { recording: { active: false } };

/** Clicks a button that is not on the page: automation_failure. */
const BROKEN = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  await ctx.page.click('#submit-order', { timeout: 1500 });
  return { out: await ctx.page.textContent('#out') };
}
`;
/** What a model that read the snapshot proposes: the page's real button. */
const HEALED = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  await ctx.page.fill('#name', 'Ada');
  await ctx.page.getByRole('button', { name: 'Greet' }).click();
  return { out: await ctx.page.textContent('#out') };
}
`;

interface Event {
  type: string;
  data: any;
}

/** The text the model was sent in its first user message (OpenAI protocol). */
function sentText(body: any): string {
  const user = body.messages.find((m: any) => m.role === 'user');
  return typeof user.content === 'string' ? user.content : user.content.map((c: any) => c.text ?? '').join('\n');
}

const fix = (code: string, confidence = 0.82) => ({
  toolCalls: [
    {
      name: 'propose_fix',
      arguments: {
        code,
        error_explanation: 'There is no #submit-order on the page.',
        fix_suggestion: 'Click the Greet button by its role and name.',
        confidence_score: confidence,
      },
    },
  ],
});

describe.each(browserBackends)('self-healing tasks on %s', (backend) => {
  let t: TestServer;
  let fixtures: FixtureServer;
  let receiver: Receiver;
  let model: ScriptedModelServer;
  const events = (): Event[] => receiver.received.map((r) => JSON.parse(r.body) as Event);

  beforeAll(async () => {
    fixtures = await startFixtureServer();
    receiver = await startReceiver();
    model = await startScriptedModel();
    t = await startTestServer({
      backend,
      env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_API_KEY: 'sk-heal-test', LLM_MODEL: 'gpt-heal', TASK_CONCURRENCY: '2' },
    });
    const hook = await call(t, 'POST', '/v1/webhooks', { url: receiver.url, subscribed_events: ['task.failed', 'task.healed', 'task.completed'] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await model?.close();
    await receiver?.close();
    await fixtures?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  function expectSchema(e: Event) {
    const v = schemas.validator(e.type)!;
    expect(v(e), `${e.type}: ${JSON.stringify(v.errors)}`).toBe(true);
  }

  async function brokenTask(selfHealing?: Record<string, unknown>): Promise<string> {
    const created = await call(t, 'POST', '/v1/task', {
      name: `heal-${Math.random().toString(36).slice(2, 10)}`,
      language: 'typescript',
      ...(selfHealing ? { selfHealing } : {}),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.data.id as string;
    const deployed = await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(BROKEN), language: 'typescript', browserConfiguration: NO_RECORDING });
    expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
    return id;
  }

  async function run(taskId: string, body: Record<string, unknown> = {}) {
    const res = await call(t, 'POST', `/v2/tasks/${taskId}/run`, { input_params: { url: `${fixtures.url}/site/form.html` }, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.run_id as string;
  }
  const eventOf = (type: string, match: (e: Event) => boolean) =>
    until(
      async () => events().filter((e) => e.type === type && match(e)),
      (l) => l.length > 0,
      90_000,
    ).then((l) => l[0]);
  const healingOf = (runId: string) =>
    until(
      async () => (await t.db.query<any>('SELECT h.* FROM task_healings h JOIN task_executions e ON e.id = h.execution_id WHERE e.run_id = $1', [runId]))[0],
      (h) => h !== undefined && h.status !== 'started',
      90_000,
    );

  it('selfHealing is documented on create, get and update; off by default; bad values are refused', async () => {
    const off = await call(t, 'POST', '/v1/task', { name: `heal-${Math.random().toString(36).slice(2, 10)}`, language: 'typescript' });
    expect(off.body.data.selfHealing).toEqual({ enabled: false, publish: 'draft' });
    const id = off.body.data.id as string;
    const updated = await call(t, 'PUT', `/v1/task/${id}`, { selfHealing: { enabled: true, publish: 'deploy' } });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body.data.selfHealing).toEqual({ enabled: true, publish: 'deploy' });
    expect((await call(t, 'GET', `/v1/task/${id}`)).body.data.selfHealing).toEqual({ enabled: true, publish: 'deploy' });
    const bad = await call(t, 'PUT', `/v1/task/${id}`, { selfHealing: { enabled: true, publish: 'now' } });
    expect(bad.status).toBe(400);
  });

  it(
    'a failed run is healed into the draft: the model saw the code, the error and the real button; task.healed validates; the draft completes',
    { timeout: 180_000 },
    async () => {
      model.script([
        (body) => {
          const text = sentText(body);
          expect(body.tools.map((tool: any) => tool.function.name)).toEqual(['propose_fix']);
          expect(text).toContain("ctx.page.click('#submit-order'");
          expect(text).toMatch(/Error: [\s\S]*\(line 3\)/);
          expect(text).toMatch(/Root cause: /);
          expect(text).toMatch(/button "Greet"/);
          return fix(HEALED);
        },
      ]);
      const taskId = await brokenTask({ enabled: true });
      const runId = await run(taskId);
      const failed = await eventOf('task.failed', (e) => e.data.run_id === runId);
      expect(failed.data.error.type).toBe('automation_failure');
      const healed = await eventOf('task.healed', (e) => e.data.run_id === runId);
      expectSchema(healed);
      expect(healed.data).toEqual({
        task_id: taskId,
        healed_task_version_id: expect.any(String),
        source_execution_id: failed.data.execution_id,
        run_id: runId,
        error_explanation: 'There is no #submit-order on the page.',
        fix_suggestion: 'Click the Greet button by its role and name.',
        confidence_score: 0.82,
        published_as_draft: true,
      });
      const draft = await call(t, 'GET', `/v1/task/${taskId}/draft`);
      expect(draft.body.data.id).toBe(healed.data.healed_task_version_id);
      expect(Buffer.from(draft.body.data.code, 'base64').toString('utf8')).toBe(HEALED);
      // Deployed versions are untouched: still version 1 only.
      const versions = (await call(t, 'GET', `/v1/task/${taskId}/versions`)).body.data.versions.map((v: any) => v.version);
      expect(versions.sort()).toEqual(['1', 'draft']);
      const again = await run(taskId, { version_id: healed.data.healed_task_version_id });
      const completed = await eventOf('task.completed', (e) => e.data.run_id === again);
      expect(completed.data.output.value).toEqual({ out: 'Hello, Ada!' });
      expect(model.received).toHaveLength(1);
    },
  );

  it('publish deploy: the fix is version 2, which latest runs use', { timeout: 180_000 }, async () => {
    model.script([fix(HEALED, 0.9)]);
    const taskId = await brokenTask({ enabled: true, publish: 'deploy' });
    const runId = await run(taskId);
    const healed = await eventOf('task.healed', (e) => e.data.run_id === runId);
    expectSchema(healed);
    expect(healed.data.published_as_draft).toBe(false);
    const v2 = await call(t, 'GET', `/v1/task/${taskId}/2`);
    expect(v2.status, JSON.stringify(v2.body)).toBe(200);
    expect(v2.body.data.id).toBe(healed.data.healed_task_version_id);
    const again = await run(taskId);
    const completed = await eventOf('task.completed', (e) => e.data.run_id === again);
    expect(completed.data.task_version_id).toBe(healed.data.healed_task_version_id);
  });

  it('code that does not parse: one retry told the syntax error, then no version and no event', { timeout: 180_000 }, async () => {
    const before = model.received.length;
    model.script([
      fix('export default async function run(ctx: any) {\n  await ctx.page.click(;\n}\n'),
      (body) => {
        const told = body.messages.find((m: any) => m.role === 'tool');
        expect(told.content).toMatch(/does not parse.*line 2/);
        return fix('export default async function run(ctx: any) {\n  return (\n');
      },
    ]);
    const taskId = await brokenTask({ enabled: true });
    const runId = await run(taskId);
    const healing = await healingOf(runId);
    expect(healing.status).toBe('given_up');
    expect(healing.reason).toMatch(/does not parse/);
    expect(model.received.length - before).toBe(2);
    expect(events().filter((e) => e.type === 'task.healed' && e.data.task_id === taskId)).toEqual([]);
    const versions = (await call(t, 'GET', `/v1/task/${taskId}/versions`)).body.data.versions.map((v: any) => v.version);
    expect(versions).toEqual(['1']);
  });

  it("the model's server failing: the healing is given up with the reason, no version, no event", { timeout: 180_000 }, async () => {
    model.script([{ status: 503 }]);
    const taskId = await brokenTask({ enabled: true });
    const runId = await run(taskId);
    const healing = await healingOf(runId);
    expect(healing.status).toBe('given_up');
    expect(healing.reason).toMatch(/503/);
    expect(healing.reason).not.toContain('sk-heal-test');
    expect(events().filter((e) => e.type === 'task.healed' && e.data.task_id === taskId)).toEqual([]);
    const versions = (await call(t, 'GET', `/v1/task/${taskId}/versions`)).body.data.versions.map((v: any) => v.version);
    expect(versions).toEqual(['1']);
  });

  it('healing off: the failure is reported, the model is not asked, nothing is saved', { timeout: 120_000 }, async () => {
    const before = model.received.length;
    const taskId = await brokenTask();
    const runId = await run(taskId);
    const failed = await eventOf('task.failed', (e) => e.data.run_id === runId);
    expect(failed.data.error.type).toBe('automation_failure');
    expect(await t.db.query('SELECT 1 FROM task_healings WHERE execution_id = $1', [failed.data.execution_id])).toEqual([]);
    expect(model.received.length).toBe(before);
    const versions = (await call(t, 'GET', `/v1/task/${taskId}/versions`)).body.data.versions.map((v: any) => v.version);
    expect(versions).toEqual(['1']);
  });
});

describe('self-healing with no model configured', () => {
  let t: TestServer;
  let fixtures: FixtureServer;
  const logs: string[] = [];

  beforeAll(async () => {
    fixtures = await startFixtureServer();
    t = await startTestServer({ backend: browserBackends[0], logs, env: { LOG_LEVEL: 'info' } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await fixtures?.close();
  });

  it('is skipped, logged at info: the run fails as it would, no healing, no version', { timeout: 120_000 }, async () => {
    const created = await call(t, 'POST', '/v1/task', { name: 'heal-no-model', language: 'typescript', selfHealing: { enabled: true } });
    const id = created.body.data.id as string;
    await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(BROKEN), language: 'typescript', browserConfiguration: NO_RECORDING });
    const started = await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: { url: `${fixtures.url}/site/form.html` } });
    const done = await until(
      async () => (await call(t, 'GET', `/v2/tasks/runs/${started.body.run_id}/status`)).body,
      (s) => !['queued', 'running'].includes(s.status),
      60_000,
    );
    expect(done.status).toBe('failure');
    expect(logs.join('\n')).toMatch(/self-healing skipped: no language model/);
    expect(await t.db.query('SELECT 1 FROM task_healings')).toEqual([]);
    const versions = (await call(t, 'GET', `/v1/task/${id}/versions`)).body.data.versions.map((v: any) => v.version);
    expect(versions).toEqual(['1']);
  });
});
