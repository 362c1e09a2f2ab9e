// Generated tasks over real HTTP: a local model server answers task code (the script checks
// what the model was told), the code is compiled and deployed, then run for real on real
// Chromium in the sandbox against a fixture page, with input_params. Code that does not
// compile twice fails the generation with the compiler's error; no model: 503; another
// project's task: 404; bad bodies: 400.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { createProject } from '../auth/api-keys.js';
import { startScriptedModel, type ScriptedModelServer, type ScriptedReply } from '../llm/scripted-server.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { call, until } from './test-support.js';

/** Fills the name, greets, and answers the greeting: the task the model is asked for. */
const GREETER = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.URL);
  await ctx.page.fill('#name', ctx.input.Name ?? 'nobody');
  await ctx.page.getByRole('button', { name: 'Greet' }).click();
  return { Greeting: await ctx.page.textContent('#out') };
}
`;
/** A missing parenthesis: esbuild refuses it. */
const BROKEN = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.URL;
}
`;
const writes = (code: string): ScriptedReply => ({ toolCalls: [{ name: 'write_task', arguments: { code } }] });

/** The text of every user and tool message the model was sent (OpenAI protocol). */
function sentText(body: any): string {
  return body.messages
    .filter((m: any) => m.role === 'user' || m.role === 'tool')
    .map((m: any) => (typeof m.content === 'string' ? m.content : m.content.map((c: any) => c.text ?? '').join('\n')))
    .join('\n');
}

const GREETER_BODY = {
  description: 'Greets a person on the greeter page',
  user_task: 'Open the page, type the name into the Name field, press Greet and return the greeting shown.',
  input_schema: [
    { display_name: 'URL', type: 'string', required: true, description: 'The greeter page' },
    { display_name: 'Name', type: 'string', default_value: 'nobody', description: 'Who to greet' },
  ],
  output_schema: [{ display_name: 'Greeting', type: 'string', description: 'The greeting the page shows' }],
  task_browser_default_configuration: { recording: { active: false }, timeout: { max_duration: 2 } },
};
const uniqueName = () => `gen-${Math.random().toString(36).slice(2, 10)}`;

describe.each(browserBackends)('generated tasks on %s', (backend) => {
  let t: TestServer;
  let fixtures: FixtureServer;
  let model: ScriptedModelServer;

  beforeAll(async () => {
    fixtures = await startFixtureServer();
    model = await startScriptedModel();
    t = await startTestServer({
      backend,
      env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_API_KEY: 'sk-gen-test', LLM_MODEL: 'gpt-gen', LLM_IMAGES: 'false' },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await model?.close();
    await fixtures?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  const status = async (id: string) => (await call(t, 'GET', `/v2/tasks/${id}/generation-status`)).body;
  const settled = (id: string) =>
    until(
      () => status(id),
      (s) => s.status !== 'generating',
      30_000,
    );

  it('writes the code from the description, mends a compile error once, deploys it, and the run greets', { timeout: 90_000 }, async () => {
    model.script([
      (body) => {
        const text = sentText(body);
        for (const said of [GREETER_BODY.user_task, '"URL" (string, required)', '"Name" (string): Who to greet; default "nobody"', '"Greeting"'])
          expect(text).toContain(said);
        expect(body.tools.map((x: any) => x.function.name)).toEqual(['write_task']);
        return writes(BROKEN);
      },
      (body) => {
        expect(sentText(body)).toMatch(/The code does not parse: .* \(line 2\)\. Call write_task again/);
        return writes(GREETER);
      },
    ]);
    const started = await call(t, 'POST', '/v2/tasks/generate', { name: uniqueName(), ...GREETER_BODY });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body).toEqual({ id: expect.any(String), status: 'generating' });
    const id = started.body.id as string;

    expect(await settled(id)).toEqual({ id, status: 'ready' });
    expect(model.received).toHaveLength(2);
    const task = (await call(t, 'GET', `/v1/task/${id}`)).body.data;
    expect(task).toMatchObject({ description: GREETER_BODY.description, latest: '1' });
    const version = (await call(t, 'GET', `/v1/task/${id}/latest`)).body.data;
    expect(Buffer.from(version.code, 'base64').toString('utf8')).toBe(GREETER);
    expect(version.browserConfiguration).toEqual(GREETER_BODY.task_browser_default_configuration);

    const run = await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: { URL: `${fixtures.url}/site/form.html`, Name: 'Ada' }, sync: true });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(run.body, JSON.stringify(run.body)).toMatchObject({ status: 'success', result: { Greeting: 'Hello, Ada!' } });
  });

  it('fails with the compiler error when the code does not compile twice; nothing is deployed', async () => {
    model.script([writes(BROKEN), writes(BROKEN)]);
    const started = await call(t, 'POST', '/v2/tasks/generate', { name: uniqueName(), description: 'never compiles', user_task: 'Open a page.' });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const id = started.body.id as string;
    const s = await settled(id);
    expect(s).toEqual({ id, status: 'failed', error: expect.stringMatching(/the generated code does not compile, twice: .* \(line 2\)/) });
    expect((await call(t, 'GET', `/v1/task/${id}/latest`)).status).toBe(404);
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {} })).status).toBe(404);
  });

  it("fails with the model's refusal when it does not call write_task, or its server errs", async () => {
    model.script([{ text: 'I cannot do that.' }, { status: 500 }]);
    const a = (await call(t, 'POST', '/v2/tasks/generate', { name: uniqueName(), description: 'x', user_task: 'Open a page.' })).body.id;
    expect(await settled(a)).toEqual({ id: a, status: 'failed', error: expect.stringContaining('the model did not call write_task') });
    const b = (await call(t, 'POST', '/v2/tasks/generate', { name: uniqueName(), description: 'x', user_task: 'Open a page.' })).body.id;
    expect(await settled(b)).toMatchObject({ id: b, status: 'failed', error: expect.stringMatching(/^The generation failed: /) });
  });

  it('refuses bad bodies with 400, a taken name with 409, an unknown application with 404', async () => {
    const base = { name: uniqueName(), description: 'd', user_task: 'Open a page.' };
    const asked = model.received.length;
    const refused = async (body: Record<string, unknown>, message: RegExp, code = 400) => {
      const res = await call(t, 'POST', '/v2/tasks/generate', body);
      expect(res.status, JSON.stringify(res.body)).toBe(code);
      expect(res.body.error.message).toMatch(message);
    };
    await refused({ name: 'x', description: 'd' }, /user_task/);
    await refused({ ...base, user_task: '' }, /user_task/);
    await refused({ ...base, name: 'has spaces' }, /name/);
    await refused({ ...base, input_schema: [{ display_name: 'URL', type: 'url' }] }, /type/);
    await refused(
      {
        ...base,
        input_schema: [
          { display_name: 'A', type: 'string' },
          { display_name: 'A', type: 'number' },
        ],
      },
      /input_schema names the parameter "A" twice/,
    );
    await refused({ ...base, task_browser_default_configuration: { x402: true } }, /x402/);
    await refused({ ...base, task_browser_default_configuration: { proxy: { active: true, city: 'Paris' } } }, /city needs proxy.region/);
    await refused({ ...base, application_id: '00000000-0000-4000-8000-000000000000' }, /Application not found/, 404);
    expect(model.received.length, 'no model call for a refused body').toBe(asked);

    model.script([writes(GREETER)]);
    const first = await call(t, 'POST', '/v2/tasks/generate', base);
    expect(first.status).toBe(200);
    await refused(base, /already exists/, 409);
    await settled(first.body.id);
  });

  it("answers 404 for another project's task and an unknown one; a task not generated is ready", async () => {
    model.script([writes(GREETER)]);
    const id = (await call(t, 'POST', '/v2/tasks/generate', { name: uniqueName(), description: 'd', user_task: 'Open a page.' })).body.id as string;
    await settled(id);
    const other = await createProject(t.db, { name: 'other-gen', source: 'test' });
    const as = { 'service-api-key': other.key };
    expect((await call(t, 'GET', `/v2/tasks/${id}/generation-status`, undefined, as)).status).toBe(404);
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {} }, as)).status).toBe(404);
    expect((await call(t, 'GET', '/v2/tasks/00000000-0000-4000-8000-000000000000/generation-status')).status).toBe(404);
    expect((await call(t, 'GET', '/v2/tasks/not-a-uuid/generation-status')).status).toBe(400);
    const made = await call(t, 'POST', '/v1/task', { name: uniqueName(), language: 'typescript' });
    expect(await status(made.body.data.id)).toEqual({ id: made.body.data.id, status: 'ready' });
  });

  it('answers 503 without a model, as perform-web-task does, and makes no task', async () => {
    const bare = await startTestServer({ backend });
    try {
      const name = uniqueName();
      const res = await call(bare, 'POST', '/v2/tasks/generate', { name, description: 'd', user_task: 'Open a page.' });
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body.error.message).toBe('No LLM provider is configured');
      expect((await call(bare, 'GET', '/v1/task')).body.data.total).toBe(0);
    } finally {
      await bare.close();
    }
  });
});
