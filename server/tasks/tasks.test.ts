// The legacy /v1/task family over real HTTP on every backend (no browser): create, list,
// get, update, delete; the draft (live_view read_only only, no x402 in its answers);
// deploy n+1, concurrent deploys never sharing a number (T1); the code, language and
// description rules (T2, a syntax error named by its line); versions; another project's
// key seeing nothing. Every answer is validated against its schema in the contract.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { compileSchema, createAjv, loadSpec } from '../http/spec.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { sessionBody } from './configuration.js';
import type { BrowserConfiguration } from './store.js';
import { b64, call, createTask, TITLE_TASK } from './test-support.js';

const spec = loadSpec();
const ajv = createAjv(spec);
const validators = new Map<string, ReturnType<typeof compileSchema>>();
function expectValid(name: string, body: unknown) {
  let v = validators.get(name);
  if (!v) validators.set(name, (v = compileSchema(ajv, { $ref: `#/components/schemas/${name}` })));
  expect(v(body), `${name}: ${JSON.stringify(v.errors)}`).toBe(true);
}

const FULL_CONFIGURATION = {
  initial_url: 'http://127.0.0.1:9/start',
  tags: ['nightly', 'checkout'],
  recording: { active: false },
  timeout: { max_duration: 3, idle_timeout: 2 },
  live_view: { read_only: true, one_time_url: true },
  x402: false,
};

describe.each(backends)('tasks on %s', (backend) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ backend });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('creates, lists, gets, updates and deletes a task; the name is unique in the project', async () => {
    const created = await call(t, 'POST', '/v1/task', { name: 'order-status', language: 'typescript', description: 'Reads an order', code: b64(TITLE_TASK) });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expectValid('TaskResponse', created.body);
    const task = created.body.data;
    expect(task).toMatchObject({
      name: 'order-status',
      description: 'Reads an order',
      latestVersion: 'draft',
      code: b64(TITLE_TASK),
      language: 'typescript',
      deleted: false,
    });

    expect((await call(t, 'POST', '/v1/task', { name: 'order-status', language: 'typescript' })).status).toBe(409);
    expect((await call(t, 'POST', '/v1/task', { name: 'has space', language: 'typescript' })).status).toBe(400);
    // A configuration is kept with a version: without code there is none to keep it in.
    const noCode = await call(t, 'POST', '/v1/task', { name: 'no-code', language: 'typescript', browserConfiguration: { tags: ['a'] } });
    expect(noCode.status).toBe(400);
    expect(noCode.body.error.message).toMatch(/needs code/);

    const got = await call(t, 'GET', `/v1/task/${task.id}`);
    expect(got.status).toBe(200);
    expectValid('TaskMetadataResponse', got.body);
    expect(got.body.data).toMatchObject({ id: task.id, name: 'order-status', latest: 'draft' });

    const other = await createTask(t, { name: 'other-task' });
    expect((await call(t, 'PUT', `/v1/task/${other}`, { name: 'order-status' })).status).toBe(409);
    const updated = await call(t, 'PUT', `/v1/task/${task.id}`, { name: 'order-status-eu', description: '' });
    expect(updated.status).toBe(200);
    expectValid('TaskMetadataResponse', updated.body);
    expect(updated.body.data.name).toBe('order-status-eu');
    expect(updated.body.data.description).toBeUndefined();
    expect((await call(t, 'PUT', `/v1/task/${task.id}`, {})).body.data.name).toBe('order-status-eu');

    const list = await call(t, 'GET', '/v1/task?limit=1&page=1');
    expect(list.status).toBe(200);
    expectValid('TaskListResponse', list.body);
    expect(list.body.data).toMatchObject({ total: 2, page: 1, limit: 1 });
    expect(list.body.data.tasks[0].id).toBe(other); // newest first

    const deleted = await call(t, 'DELETE', `/v1/task/${task.id}`);
    expect(deleted.status).toBe(200);
    expectValid('TaskDeleteResponse', deleted.body);
    expect((await call(t, 'GET', `/v1/task/${task.id}`)).status).toBe(404);
    expect((await call(t, 'GET', `/v1/task/${task.id}/draft`)).status).toBe(404);
    expect((await call(t, 'DELETE', `/v1/task/${task.id}`)).status).toBe(404);
    // The name is free again.
    expect((await call(t, 'POST', '/v1/task', { name: 'order-status-eu', language: 'typescript' })).status).toBe(200);
  });

  it('T1: deploy creates version n+1, from the body or from the draft; versions, latest and draft read back', async () => {
    const id = await createTask(t);
    const noDraft = await call(t, 'POST', `/v1/task/${id}/deploy`, {});
    expect(noDraft.status).toBe(400);
    expect(noDraft.body.error.message).toMatch(/code is required/);
    expect((await call(t, 'GET', `/v1/task/${id}/latest`)).status).toBe(404);

    const first = await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(TITLE_TASK), description: 'one', browserConfiguration: FULL_CONFIGURATION });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expectValid('TaskVersionResponse', first.body);
    expect(first.body.data).toMatchObject({ taskId: id, version: '1', description: 'one', browserConfiguration: FULL_CONFIGURATION });

    const draft = await call(t, 'POST', `/v1/task/${id}/draft`, {
      code: b64('export default async function run() { return 2; }'),
      browserConfiguration: FULL_CONFIGURATION,
    });
    expect(draft.status, JSON.stringify(draft.body)).toBe(200);
    expectValid('TaskDraftVersionResponse', draft.body);
    // The draft's answer shows live_view with read_only only and no x402; the draft keeps them.
    expect(draft.body.data.browserConfiguration.live_view).toEqual({ read_only: true });
    expect(draft.body.data.browserConfiguration).not.toHaveProperty('x402');
    expect(draft.body.data.description).toBeNull();
    const draftGet = await call(t, 'GET', `/v1/task/${id}/draft`);
    expectValid('TaskDraftVersionResponse', draftGet.body);
    expect(draftGet.body.data).toEqual(draft.body.data);
    expect((await call(t, 'GET', `/v1/task/${id}/versions`)).body.data.versions.map((v: any) => v.version)).toEqual(['draft', '1']);

    // Saving again replaces the draft: same id.
    const again = await call(t, 'POST', `/v1/task/${id}/draft`, { code: b64('export default async function run() { return 3; }'), description: 'three' });
    expect(again.body.data.id).toBe(draft.body.data.id);
    expect(again.body.data.browserConfiguration).toEqual({});

    const fromDraft = await call(t, 'POST', `/v1/task/${id}/deploy`);
    expect(fromDraft.status, JSON.stringify(fromDraft.body)).toBe(200);
    expect(fromDraft.body.data).toMatchObject({ version: '2', code: b64('export default async function run() { return 3; }'), description: 'three' });
    const overridden = await call(t, 'POST', `/v1/task/${id}/deploy`, { description: 'four' });
    expect(overridden.body.data).toMatchObject({ version: '3', description: 'four' });

    const latest = await call(t, 'GET', `/v1/task/${id}/latest`);
    expectValid('TaskVersionResponse', latest.body);
    expect(latest.body.data.version).toBe('3');
    expect((await call(t, 'GET', `/v1/task/${id}/1`)).body.data).toMatchObject({ version: '1', browserConfiguration: FULL_CONFIGURATION });
    expect((await call(t, 'GET', `/v1/task/${id}/latest`)).body.data.id).toBe(overridden.body.data.id);
    expect((await call(t, 'GET', `/v1/task/${id}`)).body.data.latest).toBe('3');
    const versions = await call(t, 'GET', `/v1/task/${id}/versions`);
    expectValid('TaskVersionListResponse', versions.body);
    expect(versions.body.data.versions.map((v: any) => v.version)).toEqual(['draft', '3', '2', '1']);
    expect((await call(t, 'GET', `/v1/task/${id}/9`)).status).toBe(404);

    // A deleted version is gone, latest names the highest left, and its number is never reused.
    expect((await call(t, 'DELETE', `/v1/task/${id}/3`)).status).toBe(200);
    expect((await call(t, 'GET', `/v1/task/${id}/3`)).status).toBe(404);
    expect((await call(t, 'GET', `/v1/task/${id}/latest`)).body.data.version).toBe('2');
    expect((await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(TITLE_TASK) })).body.data.version).toBe('4');

    // Publishing a number: a new one needs code; an existing one takes the fields given.
    expect((await call(t, 'POST', `/v1/task/${id}/7`, { description: 'x' })).status).toBe(400);
    const published = await call(t, 'POST', `/v1/task/${id}/7`, { code: b64(TITLE_TASK), description: 'seven' });
    expect(published.status, JSON.stringify(published.body)).toBe(200);
    expect(published.body.data.version).toBe('7');
    expect((await call(t, 'POST', `/v1/task/${id}/7`, { description: 'seven!' })).body.data).toMatchObject({ description: 'seven!', code: b64(TITLE_TASK) });
    expect((await call(t, 'POST', `/v1/task/${id}/draft`, { code: 'x' })).status).toBe(400);
    expect((await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(TITLE_TASK) })).body.data.version).toBe('8');
  });

  it('T1: concurrent deploys never get the same number', async () => {
    const id = await createTask(t);
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(TITLE_TASK), description: `d${i}` })),
    );
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    const numbers = answers.map((a) => Number(a.body.data.version)).sort((x, y) => x - y);
    expect(numbers).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
  });

  it('T2: code must be base64 of UTF-8 TypeScript that parses, at least 1 character; language typescript; description at most 1000', async () => {
    const id = await createTask(t);
    const bad: [unknown, RegExp][] = [
      [{ code: '' }, /code/],
      [{ code: 'not base64!' }, /code/],
      [{ code: 'QUJD=A' }, /code/],
      [{ code: Buffer.from([0xff, 0xfe, 0x41]).toString('base64') }, /UTF-8/],
      [{ code: b64('export default async function run(ctx) {\n  return {;\n}\n') }, /line 2/],
      [{ code: b64(TITLE_TASK), language: 'javascript' }, /language/],
      [{ code: b64(TITLE_TASK), description: 'x'.repeat(1001) }, /description/],
      [{ code: b64(TITLE_TASK), browserConfiguration: { x402: true } }, /x402/],
      [{ code: b64(TITLE_TASK), browserConfiguration: { initial_url: 'ftp://example.com/' } }, /initial_url|http/],
      [{ code: b64(TITLE_TASK), browserConfiguration: { proxy: { active: true, city: 'Berlin' } } }, /region/],
      [{ code: b64(TITLE_TASK), extra: 1 }, /extra|additional/],
    ];
    for (const path of [`/v1/task/${id}/deploy`, `/v1/task/${id}/draft`]) {
      for (const [body, message] of bad) {
        const res = await call(t, 'POST', path, body);
        expect(res.status, `${path} ${JSON.stringify(body).slice(0, 80)}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.error.message).toMatch(message);
      }
    }
    const create = await call(t, 'POST', '/v1/task', { name: 'bad-code', language: 'typescript', code: b64('let x = ;') });
    expect(create.status).toBe(400);
    expect(create.body.error.message).toMatch(/line 1/);
    expect((await call(t, 'GET', `/v1/task/${id}/versions`)).body.data.versions).toEqual([]);
    // The boundary values pass.
    const ok = await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(TITLE_TASK), description: 'x'.repeat(1000), language: 'typescript' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it('another project sees none of it, and unknown ids answer 404', async () => {
    const id = await createTask(t, { code: b64(TITLE_TASK) });
    await call(t, 'POST', `/v1/task/${id}/deploy`);
    const other = await createProject(t.db, { name: 'other', source: 'test' });
    const as = { 'service-api-key': other.key };
    for (const [method, path] of [
      ['GET', `/v1/task/${id}`],
      ['GET', `/v1/task/${id}/draft`],
      ['GET', `/v1/task/${id}/versions`],
      ['GET', `/v1/task/${id}/1`],
      ['GET', `/v1/task/${id}/executions`],
      ['DELETE', `/v1/task/${id}`],
    ] as const) {
      expect((await call(t, method, path, undefined, as)).status, path).toBe(404);
    }
    expect((await call(t, 'POST', `/v1/task/${id}/deploy`, { code: b64(TITLE_TASK) }, as)).status).toBe(404);
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {} }, as)).status).toBe(404);
    expect((await call(t, 'GET', '/v1/task', undefined, as)).body.data.total).toBe(0);
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await call(t, 'GET', `/v2/tasks/runs/${unknown}/status`)).status).toBe(404);
    expect((await call(t, 'POST', `/v2/tasks/runs/${unknown}/cancel`)).status).toBe(404);
    expect((await call(t, 'POST', `/v2/tasks/${unknown}/run`, { input_params: {} })).status).toBe(404);
    expect((await call(t, 'GET', `/v1/task/${unknown}/executions/${unknown}`)).status).toBe(404);
  });

  it("reads the vendor's anchor_proxy as service_proxy, in versions and a run's override; the run's session asks for the service's proxy", async () => {
    const id = await createTask(t, { code: b64(TITLE_TASK) });
    const proxy = { active: true, type: 'anchor_proxy', country_code: 'de' };
    // This server has no proxy pool: both names get the same refusal, past validation.
    for (const path of [`/v1/task/${id}/draft`, `/v1/task/${id}/deploy`]) {
      const answers = [];
      for (const type of ['anchor_proxy', 'service_proxy']) {
        const res = await call(t, 'POST', path, { code: b64(TITLE_TASK), browserConfiguration: { proxy: { ...proxy, type } } });
        expect(res.status).toBe(400);
        answers.push(res.body.error.message);
      }
      expect(answers[0]).toMatch(/Service proxies are not available/);
      expect(answers[0]).toBe(answers[1]);
    }
    expectValid('TaskExecuteRequest', { taskId: id, overrideBrowserConfiguration: { proxy } });
    expect(sessionBody({ proxy } as BrowserConfiguration).session?.proxy).toEqual({ active: true, type: 'service_proxy', country_code: 'de' });
  });

  it('a run asks for a deployed version, an existing session, an identity that exist', async () => {
    const id = await createTask(t, { code: b64(TITLE_TASK) });
    const noVersion = await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {} });
    expect(noVersion.status).toBe(404);
    expect(noVersion.body.error.message).toMatch(/no deployed version/);
    await call(t, 'POST', `/v1/task/${id}/deploy`);
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {}, version: '5' })).status).toBe(404);
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {}, session_id: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
    const identity = await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {}, identity_id: '00000000-0000-4000-8000-000000000000' });
    expect(identity.status).toBe(404);
    expect(identity.body.error.message).toMatch(/identit/i);
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: {}, version: '1', version_id: '00000000-0000-4000-8000-000000000000' })).status).toBe(
      400,
    );
    expect((await call(t, 'POST', `/v2/tasks/${id}/run`, { input_params: { n: 1 } })).status).toBe(400);
    expect(await t.db.query('SELECT 1 FROM task_executions')).toHaveLength(0);
  });
});
