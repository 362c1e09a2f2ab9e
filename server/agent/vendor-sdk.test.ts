// The hosted vendor's SDK (npm anchorbrowser), unchanged, on perform-web-task: tools.
// performWebTask (sync and async), tools.getPerformWebTaskStatus, and agent.task, which
// creates a session, opens the URL through sessions.goto and calls perform-web-task in it,
// its onAgentStep fed by the /ws stream; and who that stream lets in.
import Anchorbrowser from 'anchorbrowser';
import { WebSocket } from 'ws';
import { createProject } from '../auth/api-keys.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../llm/scripted-server.js';
import { eventually, tryWebSocket } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { lastObservation } from './test-support.js';
import { startTestSite, type TestSite } from './test-site.js';

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };

describe('the vendor SDK on perform-web-task', () => {
  let site: TestSite;
  let model: ScriptedModelServer;
  let server: TestServer;
  let client: Anchorbrowser;

  beforeAll(async () => {
    site = await startTestSite();
    model = await startScriptedModel();
    server = await startTestServer({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_MODEL: 'gpt-test', LLM_IMAGES: 'false' } });
    client = new Anchorbrowser({ apiKey: server.apiKey, baseURL: server.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await model?.close();
    await site?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  it('tools.performWebTask in a session, sync then async with tools.getPerformWebTaskStatus', async () => {
    const s = await client.sessions.create(HEADLESS);
    const id = s.data!.id!;
    model.script([
      { toolCalls: [{ name: 'navigate', arguments: { url: site.url('/table') } }] },
      { toolCalls: [{ name: 'finish', arguments: { answer: { count: 3 } } }] },
    ]);
    const sync = await client.tools.performWebTask({
      sessionId: id,
      prompt: 'How many products are listed?',
      output_schema: { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
      max_steps: 5,
    });
    expect(sync.data.result).toMatchObject({ result: { count: 3 }, session_id: id });

    model.script([{ toolCalls: [{ name: 'finish', arguments: { answer: 'Products' } }] }]);
    const started = (await client.tools.performWebTask({ sessionId: id, prompt: 'What is the heading?', async: true } as never)) as unknown as {
      data: { status: string; workflow_id: string };
    };
    expect(started.data.status).toBe('running');
    const done = await eventually(
      async () => {
        const st = await client.tools.getPerformWebTaskStatus(started.data.workflow_id);
        return st.data.status === 'RUNNING' ? undefined : st;
      },
      15_000,
      'the async task to end',
    );
    expect(done!.data).toMatchObject({ status: 'COMPLETED', result: { result: 'Products', session_id: id } });
    await client.sessions.delete(id);
  });

  it('agent.task: a session of its own, the URL opened by sessions.goto, the task run in it', async () => {
    model.script([
      (body) => {
        expect(lastObservation(body)).toContain('Page title: Products');
        return { toolCalls: [{ name: 'finish', arguments: { answer: 'Espresso machine' } }] };
      },
    ]);
    const r = (await client.agent.task('Which product is listed first?', { sessionOptions: HEADLESS as never, taskOptions: { url: site.url('/table') } })) as {
      data: { result: { result: unknown; session_id: string } };
    };
    expect(r.data.result.result).toBe('Espresso machine');
    await client.sessions.delete(r.data.result.session_id);
  });

  it('directlyOpenUrl opens the one URL of the prompt before the first step; agent.task sends it as directly_open_url', async () => {
    const s = await client.sessions.create(HEADLESS);
    const id = s.data!.id!;
    model.script([
      (body) => {
        expect(lastObservation(body)).toContain('Page title: Products');
        return { toolCalls: [{ name: 'finish', arguments: { answer: 3 } }] };
      },
    ]);
    const opened = await client.tools.performWebTask({
      sessionId: id,
      prompt: `How many products are listed on ${site.url('/table')}?`,
      directlyOpenUrl: true,
    });
    expect(opened.data.result).toMatchObject({ result: 3, steps: [] });

    // Without it, the agent starts where the session is (the same page, now) and is not moved.
    await client.sessions.goto(id, { url: site.url('/form/1') });
    model.script([
      (body) => {
        expect(lastObservation(body)).toContain('Page title: Sign up: step 1 of 2');
        return { toolCalls: [{ name: 'finish', arguments: { answer: 'stayed' } }] };
      },
    ]);
    expect((await client.tools.performWebTask({ sessionId: id, prompt: `Look at ${site.url('/table')}` })).data.result).toMatchObject({ result: 'stayed' });

    // The vendor's agent.task spelling, over the wire; two URLs in the prompt open none.
    const perform = (body: unknown) =>
      server.request(`/v1/tools/perform-web-task?sessionId=${id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    model.script([
      (body) => {
        expect(lastObservation(body)).toContain('Page title: Sign up: step 1 of 2');
        return { toolCalls: [{ name: 'finish', arguments: { answer: 'two' } }] };
      },
    ]);
    const two = await perform({ prompt: `Compare ${site.url('/table')} and ${site.url('/moving')}.`, directly_open_url: true });
    expect(two.status).toBe(200);
    const clash = await perform({ prompt: 'x', directlyOpenUrl: true, directly_open_url: false });
    expect(clash.status).toBe(400);
    expect(((await clash.json()) as { error: { message: string } }).error.message).toContain('disagree');
    await client.sessions.delete(id);
  });

  it('agent.task with onAgentStep: every step reaches the callback as the agent makes it', async () => {
    const got: unknown[] = [];
    let arrivedBeforeTheEnd = -1;
    model.script([
      { toolCalls: [{ name: 'navigate', arguments: { url: site.url('/table') } }] },
      { toolCalls: [{ name: 'scroll', arguments: { direction: 'down' } }] },
      () => {
        // Two model turns after the first step: it has long reached the client.
        arrivedBeforeTheEnd = got.length;
        return { toolCalls: [{ name: 'finish', arguments: { answer: 'done' } }] };
      },
    ]);
    const r = (await client.agent.task('Open the table, then scroll', {
      sessionOptions: HEADLESS as never,
      taskOptions: { onAgentStep: (step) => void got.push(step) },
    })) as { data: { result: { steps: { action: string; target?: string; ok: boolean; outcome: string }[]; session_id: string } } };
    const steps = r.data.result.steps;
    expect(steps.map((s) => s.action)).toEqual(['navigate', 'scroll']);
    expect(arrivedBeforeTheEnd).toBeGreaterThanOrEqual(1);
    // One message a step, a string as the SDK's type says, in order.
    expect(got).toEqual(steps.map((s) => `${s.action}${s.target ? ` ${s.target}` : ''}: ${s.ok ? 'ok' : 'failed'}, ${s.outcome}`));
    await client.sessions.delete(r.data.result.session_id);
  });

  it("/ws: a key sent must be of the session's project; unknown sessions, bad keys and plain GETs are refused", async () => {
    const id = (await client.sessions.create(HEADLESS)).data!.id!;
    const ws = (query: string) => server.url.replace(/^http/, 'ws') + `/ws?${query}`;
    const other = await createProject(server.db, { name: 'other', source: 'test' });
    expect(await tryWebSocket(ws(`sessionId=${id}`), { 'anchor-api-key': other.key })).toBe(404);
    expect(await tryWebSocket(ws(`sessionId=${id}&apiKey=${other.key}`))).toBe(404);
    expect(await tryWebSocket(ws(`sessionId=${id}&apiKey=nope`))).toBe(401);
    expect(await tryWebSocket(ws(`sessionId=${id}`), { 'service-api-key': 'nope' })).toBe(401);
    expect(await tryWebSocket(ws(`sessionId=00000000-0000-4000-8000-000000000000`))).toBe(404);
    expect(await tryWebSocket(ws('sessionId=not-a-session'))).toBe(400);
    expect(await tryWebSocket(ws(`sessionId=${id}&apiKey=${server.apiKey}`))).toBe('open');
    const plain = await fetch(`${server.url}/ws?sessionId=${id}`, { headers: { 'service-api-key': server.apiKey } });
    expect(plain.status).toBe(426);
    expect((await fetch(`${server.url}/ws`)).status).toBe(400);

    // A listener is told when the session ends.
    const listener = new WebSocket(ws(`sessionId=${id}`), { headers: { 'service-api-key': server.apiKey } });
    await new Promise((resolve, reject) => listener.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => listener.once('close', resolve));
    await client.sessions.delete(id);
    expect(await closed).toBe(1000);
  });
});
