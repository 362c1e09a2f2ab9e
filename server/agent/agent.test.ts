// perform-web-task end to end over real HTTP: the real server, real Chromium, the fixture
// site, and a local model server answering a scripted conversation in each protocol. The
// scripts read the refs off the snapshot the model was sent, as a model would, so the tests
// check what the model saw as well as what the agent did to the pages.
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../llm/scripted-server.js';
import { browsersDirFor, createSession, endSession, eventually, getSession, HEADLESS, processesUnder, roots } from '../sessions/test-support.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { lastHasImage, lastObservation, lastToolResults, refOf } from './test-support.js';
import { PRODUCTS, startTestSite, type TestSite } from './test-site.js';

const KEY = 'sk-llm-test-key-never-logged-42';
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

describe.each(browserBackends)('perform-web-task, OpenAI protocol (%s)', (backend) => {
  let site: TestSite;
  let model: ScriptedModelServer;
  let server: TestServer;
  const logs: string[] = [];

  beforeAll(async () => {
    site = await startTestSite();
    model = await startScriptedModel();
    server = await startTestServer({
      backend,
      logs,
      env: {
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: model.baseUrl('openai'),
        LLM_API_KEY: KEY,
        LLM_MODEL: 'gpt-test',
        PRICE_PER_AGENT_STEP: '0.5',
        LOG_LEVEL: 'debug',
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await model?.close();
    await site?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  const perform = async (body: unknown, sessionId?: string) => {
    const res = await server.request(`/v1/tools/perform-web-task${sessionId ? `?sessionId=${sessionId}` : ''}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const billedCredits = async (): Promise<number> => ((await (await server.request('/v1/billing')).json()) as any).data.credits_used;
  const agentCredits = async () =>
    (await server.db.query<{ c: number }>(`SELECT COALESCE(sum(credits), 0)::float8 AS c FROM usage_ledger WHERE kind = 'agent_step'`))[0].c;

  it('fills a two-page form in a running session: every step recorded, the model shown refs and a screenshot, steps billed', async () => {
    const s = await createSession(server, HEADLESS);
    const before = await agentCredits();
    const billedBefore = await billedCredits();
    model.script([
      (body) => {
        const seen = lastObservation(body);
        expect(seen).toContain('Task: Sign up as Ada Lovelace');
        expect(seen).toContain('Page title: Sign up: step 1 of 2');
        expect(lastHasImage(body)).toBe(true);
        expect(body.model).toBe('gpt-test');
        expect(body.tools.map((t: any) => t.function.name)).toEqual(['navigate', 'click', 'type', 'select', 'scroll', 'wait', 'extract', 'finish', 'give_up']);
        return {
          toolCalls: [
            call('type', { ref: refOf(seen, 'textbox', 'Full name'), element: 'Full name', text: 'Ada Lovelace' }),
            call('type', { ref: refOf(seen, 'textbox', 'Email'), text: 'ada@example.com' }),
            call('click', { ref: refOf(seen, 'button', 'Next'), element: 'Next' }),
          ],
        };
      },
      (body) => {
        const seen = lastObservation(body);
        expect(seen).toContain('Page title: Sign up: step 2 of 2');
        expect(lastToolResults(body).slice(-3)).toEqual(['Typed.', 'Typed.', 'Clicked.']);
        return {
          toolCalls: [
            call('select', { ref: refOf(seen, 'combobox', 'Plan'), values: ['Pro'] }),
            call('click', { ref: refOf(seen, 'checkbox', 'I accept the terms') }),
            call('click', { ref: refOf(seen, 'button', 'Submit') }),
          ],
        };
      },
      (body) => {
        expect(lastObservation(body)).toContain('heading "Thank you, Ada Lovelace!"');
        // The step caption shown for the live view and the recording is no part of the page's snapshot.
        expect(lastObservation(body)).not.toContain('Agent step');
        return { toolCalls: [call('finish', { answer: 'Signed up as Ada Lovelace on the Pro plan' })] };
      },
    ]);
    const r = await perform({ prompt: 'Sign up as Ada Lovelace (ada@example.com) on the Pro plan', url: site.url('/form/1') }, s.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const result = r.body.data.result;
    expect(result.result).toBe('Signed up as Ada Lovelace on the Pro plan');
    expect(result.session_id).toBe(s.id);
    expect(result.steps.map((x: any) => [x.action, x.ok])).toEqual([
      ['type', true],
      ['type', true],
      ['click', true],
      ['select', true],
      ['click', true],
      ['click', true],
    ]);
    expect(result.steps[0]).toMatchObject({ target: expect.stringMatching(/^\w+ \(Full name\)$/), outcome: 'Typed.' });
    expect(result.steps[3].outcome).toBe('Selected ["pro"].');
    expect(site.submissions).toEqual([
      { path: '/form/2', query: { name: 'Ada Lovelace', email: 'ada@example.com' } },
      { path: '/form/done', query: { name: 'Ada Lovelace', email: 'ada@example.com', plan: 'pro', terms: 'yes' } },
    ]);
    // Six steps at PRICE_PER_AGENT_STEP 0.5; the session named stays running.
    expect((await agentCredits()) - before).toBe(3);
    // And in the project's usage (the session's own credits come when it ends).
    expect((await billedCredits()) - billedBefore).toBeCloseTo(3, 6);
    expect((await getSession(server, s.id)).body.data.status).toBe('running');
    // The last step is on screen, for the live view and the recording.
    const watcher = await chromium.connectOverCDP(s.cdp_url);
    try {
      const onScreen = await watcher
        .contexts()[0]!
        .pages()[0]!
        .evaluate(() => (window as any).__agentStep?.textContent);
      expect(onScreen).toMatch(/^Agent step 6: click \w+: Clicked\.$/);
    } finally {
      await watcher.close();
    }
    await endSession(server, s.id);
    // The key went to the model's server, and to no log line.
    expect(model.received[0].headers.authorization).toBe(`Bearer ${KEY}`);
    expect(logs.length).toBeGreaterThan(0);
    expect(logs.join('\n')).not.toContain(KEY);
  });

  it('extracts a table into an output_schema in a temporary session: a non-conforming answer is refused and corrected; the session ends and leaves nothing', async () => {
    const schema = {
      type: 'object',
      required: ['products'],
      properties: {
        products: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'price', 'in_stock'],
            additionalProperties: false,
            properties: { name: { type: 'string' }, price: { type: 'number' }, in_stock: { type: 'boolean' } },
          },
        },
      },
    };
    const answer = { products: PRODUCTS.map((p) => ({ name: p.name, price: p.price, in_stock: p.stock > 0 })) };
    model.script([
      (body) => {
        expect(lastObservation(body)).toContain('Page title: Products');
        const finish = body.tools.find((t: any) => t.function.name === 'finish');
        expect(finish.function.parameters.properties.answer).toEqual(schema);
        return { toolCalls: [call('extract', {})] };
      },
      (body) => {
        const [table] = lastToolResults(body).slice(-1);
        expect(table).toContain('Espresso machine\t249.50\t4');
        expect(table).toContain('Milk frother\t39.00\t0');
        return { toolCalls: [call('finish', { answer: { products: [{ name: 'Espresso machine', price: '249.50', in_stock: true }] } })] };
      },
      (body) => {
        // The refused finish is answered, and the correction is asked for in the structured mode, without tools.
        expect(lastToolResults(body).at(-1)).toMatch(/^The answer was not accepted: answer\/products\/0\/price must be number/);
        expect(lastObservation(body)).toMatch(/^Give the corrected answer\./);
        expect(body.response_format).toMatchObject({ type: 'json_schema', json_schema: { schema: { properties: { answer: schema } } } });
        expect(body.tools).toBeUndefined();
        return { text: JSON.stringify({ answer }) };
      },
    ]);
    const r = await perform({ prompt: 'List the products with their price and whether they are in stock', url: site.url('/table'), output_schema: schema });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.result.result).toEqual(answer);
    expect(r.body.data.result.steps).toHaveLength(1);
    const sessionId = r.body.data.result.session_id;
    expect((await getSession(server, sessionId)).body.data.status).not.toBe('running');
    const browsers = browsersDirFor(server.dataDir);
    await eventually(() => roots(browsers).length === 0 && processesUnder(browsers).length === 0, 10_000, 'the temporary browser to be gone');
  });

  it('async: answers a workflow_id at once; the status path shows the steps while it runs, then COMPLETED with the result', async () => {
    const s = await createSession(server, HEADLESS);
    model.script([
      { toolCalls: [call('navigate', { url: site.url('/table') })] },
      // The model thinks long enough for the status to be read while running.
      { delayMs: 1500, toolCalls: [call('finish', { answer: 'three products' })] },
    ]);
    const started = await perform({ prompt: 'Count the products', async: true }, s.id);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect(started.body.data).toEqual({ status: 'running', workflow_id: expect.stringMatching(/^perform-web-task-[0-9a-f-]{36}$/) });
    const status = async () => {
      const res = await server.request(`/v1/tools/perform-web-task/${started.body.data.workflow_id}/status`);
      expect(res.status).toBe(200);
      return ((await res.json()) as any).data;
    };
    const running = await eventually(
      async () => {
        const d = await status();
        return d.status === 'RUNNING' && d.steps?.length === 1 ? d : undefined;
      },
      10_000,
      'a running status with one step',
    );
    expect(running.steps[0]).toMatchObject({ action: 'navigate', target: site.url('/table'), ok: true });
    // One agent at a time in a session.
    expect(await perform({ prompt: 'Something else' }, s.id)).toEqual({
      status: 409,
      body: { error: { code: 409, message: 'A web task is already running in this session' } },
    });
    const done = await eventually(
      async () => {
        const d = await status();
        return d.status !== 'RUNNING' ? d : undefined;
      },
      15_000,
      'the end',
    );
    expect(done).toEqual({
      status: 'COMPLETED',
      result: { result: 'three products', session_id: s.id, steps: [expect.objectContaining({ action: 'navigate' })] },
    });
    expect((await server.request('/v1/tools/perform-web-task/perform-web-task-nope/status')).status).toBe(404);
    await endSession(server, s.id);
  });

  it('a RUNNING task whose server stopped (past its deadline) reads as FAILED, with the steps it had taken', async () => {
    const [{ project_id }] = await server.db.query<{ project_id: string }>('SELECT project_id FROM api_keys LIMIT 1');
    const id = 'perform-web-task-lost';
    const steps = [{ action: 'navigate', target: 'https://example.com/', outcome: 'Loaded https://example.com/ (HTTP 200).', ok: true, duration_ms: 120 }];
    await server.db.query(`INSERT INTO web_tasks (id, project_id, status, steps, deadline) VALUES ($1, $2, 'RUNNING', $3, now() - interval '1 hour')`, [
      id,
      project_id,
      JSON.stringify(steps),
    ]);
    const res = await server.request(`/v1/tools/perform-web-task/${id}/status`);
    expect(await res.json()).toEqual({ data: { status: 'FAILED', error: 'The web task was interrupted: its server stopped before it finished', steps } });
    const [row] = await server.db.query<{ status: string }>('SELECT status FROM web_tasks WHERE id = $1', [id]);
    expect(row.status).toBe('FAILED');
  });

  it('the step budget, the time limit, a failing model and a model that gives up end the task with a clear error', async () => {
    const s = await createSession(server, HEADLESS);
    model.script([
      { toolCalls: [call('scroll', { direction: 'down' })] },
      { toolCalls: [call('scroll', { direction: 'down' })] },
      { toolCalls: [call('scroll', { direction: 'up' })] },
    ]);
    const budget = await perform({ prompt: 'Scroll forever', url: site.url('/table'), max_steps: 2 }, s.id);
    expect(budget).toEqual({ status: 422, body: { error: { code: 422, message: 'Maximum number of steps exceeded' } } });

    model.script([{ delayMs: 3000, text: 'too late' }]);
    const slow = await perform({ prompt: 'Think', time_limit_seconds: 1 }, s.id);
    expect(slow).toEqual({ status: 422, body: { error: { code: 422, message: 'The web task ran out of time (1 s)' } } });

    model.script([{ status: 529 }]);
    const failing = await perform({ prompt: 'Anything' }, s.id);
    expect(failing).toEqual({ status: 502, body: { error: { code: 502, message: "The model's server answered 529: scripted error 529" } } });

    model.script([{ toolCalls: [call('give_up', { reason: 'the page has no search form' })] }]);
    const gaveUp = await perform({ prompt: 'Search' }, s.id);
    expect(gaveUp).toEqual({ status: 422, body: { error: { code: 422, message: 'The agent gave up: the page has no search form' } } });
    await endSession(server, s.id);
  });

  it('secret_values are typed by name: the page gets the value, the model and the record only {{name}}', async () => {
    const s = await createSession(server, HEADLESS);
    const secret = 'hunter2 & co';
    const from = model.received.length;
    model.script([
      (body) => {
        const seen = lastObservation(body);
        expect(body.messages[0].content).toContain('Secrets you may type, by name, written {{name}} in the text of type: pw');
        expect(lastHasImage(body)).toBe(false);
        return {
          toolCalls: [
            call('type', { ref: refOf(seen, 'textbox', 'Full name'), text: '{{pw}}' }),
            call('type', { ref: refOf(seen, 'textbox', 'Email'), text: 'pw@example.com', submit: true }),
          ],
        };
      },
      (body) => {
        expect(lastObservation(body)).toContain('name={{pw}}');
        return { toolCalls: [call('extract', {}), call('finish', { answer: 'done' })] };
      },
      (body) => {
        throw new Error(`no third turn expected: ${lastToolResults(body).join(' | ')}`);
      },
    ]);
    const r = await perform({ prompt: 'Type the password pw as the name', url: site.url('/form/1'), secret_values: { pw: secret } }, s.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.result.steps.map((x: any) => x.outcome)).toEqual(['Typed.', 'Typed and pressed Enter.', expect.stringContaining('Choose a plan')]);
    expect(r.body.data.result.steps[2].outcome).not.toContain('Agent step');
    expect(site.submissions.at(-1)).toEqual({ path: '/form/2', query: { name: secret, email: 'pw@example.com' } });
    const sent = JSON.stringify(model.received.slice(from).map((x) => x.body));
    expect(sent).not.toContain('hunter2');
    expect(JSON.stringify(r.body)).not.toContain('hunter2');
    await endSession(server, s.id);
  });

  it('with human_intervention the agent asks a person and goes on with the answer; paused, it waits before its next step until resumed', async () => {
    const s = await createSession(server, HEADLESS);
    model.script([
      { toolCalls: [call('ask_human', { message: 'Buy the 3 products for 59.90 EUR?', input_type: 'confirm' })] },
      { toolCalls: [call('navigate', { url: site.url('/table') })] },
      { toolCalls: [call('finish', { answer: 'bought' })] },
    ]);
    const from = model.received.length;
    const pause = await server.request(`/v1/sessions/${s.id}/agent/pause`, { method: 'POST' });
    expect(pause.status).toBe(200);
    const started = await perform({ prompt: 'Buy the products', human_intervention: true, async: true }, s.id);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const status = async () => ((await (await server.request(`/v1/tools/perform-web-task/${started.body.data.workflow_id}/status`)).json()) as any).data;
    // Paused from the start: no model call, no step.
    // Negative: time for the agent to connect and reach its pause (nothing tells it has); no call comes.
    await new Promise((r) => setTimeout(r, 1500));
    expect(model.received.length).toBe(from);
    expect((await server.request(`/v1/sessions/${s.id}/agent/resume`, { method: 'POST' })).status).toBe(200);

    const pending = await eventually(
      async () => {
        const list = ((await (await server.request(`/v1/sessions/${s.id}/agent/requested-human-intervention`)).json()) as any).data.requests;
        return list.length === 1 ? list[0] : undefined;
      },
      15_000,
      'the agent to ask',
    );
    expect(pending).toMatchObject({ message: 'Buy the 3 products for 59.90 EUR?', input_type: 'confirm' });
    const answered = await server.request(`/v1/sessions/${s.id}/agent/respond-to-human-intervention`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requestId: pending.request_id, response: 'yes' }),
    });
    expect(answered.status).toBe(200);
    const done = await eventually(
      async () => {
        const d = await status();
        return d.status !== 'RUNNING' ? d : undefined;
      },
      20_000,
      'the end',
    );
    expect(done).toMatchObject({ status: 'COMPLETED', result: { result: 'bought' } });
    // The model was told the answer after asking.
    expect(lastToolResults(model.received[from + 1]!.body)).toContain('The person answered: yes');
    await endSession(server, s.id);
  });

  it('refuses what it does not offer with 400, an unknown session with 404', async () => {
    const bad = async (body: unknown, message: string | RegExp, sessionId?: string, status = 400) => {
      const r = await perform(body, sessionId);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      expect(r.body.error.message).toMatch(message);
    };
    await bad({ prompt: 'x', agent: 'openai-cua' }, 'agent openai-cua is not offered by this server; it runs browser-use');
    await bad({ prompt: 'x', provider: 'anthropic' }, "provider anthropic is not offered by this server; its model is openai's");
    await bad({ prompt: 'x', output_schema: { type: 'nonsense' } }, /^output_schema is not a valid JSON Schema: /);
    await bad({ prompt: 'x', max_steps: 0 }, /max_steps/);
    await bad({ prompt: 'x' }, 'Session not found', '00000000-0000-4000-8000-000000000000', 404);
  });
});

describe('perform-web-task, Anthropic protocol, a text-only model', () => {
  let site: TestSite;
  let model: ScriptedModelServer;
  let server: TestServer;

  beforeAll(async () => {
    site = await startTestSite();
    model = await startScriptedModel();
    server = await startTestServer({
      env: { LLM_PROVIDER: 'anthropic', LLM_BASE_URL: model.baseUrl('anthropic'), LLM_MODEL: 'claude-test', LLM_IMAGES: 'false' },
    });
  });
  afterAll(async () => {
    await server?.close();
    await model?.close();
    await site?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  it('a button replaced after a click: the stale ref fails as a step, the fresh snapshot names the new one, the model override is sent', async () => {
    const s = await createSession(server, HEADLESS);
    let stale = '';
    model.script([
      (body) => {
        const seen = lastObservation(body);
        expect(lastHasImage(body)).toBe(false);
        expect(body.model).toBe('claude-other');
        stale = refOf(seen, 'button', 'Buy');
        return { toolCalls: [call('click', { ref: refOf(seen, 'button', 'Show details') }), call('click', { ref: stale, element: 'Buy' })] };
      },
      (body) => {
        const seen = lastObservation(body);
        const fresh = refOf(seen, 'button', 'Buy');
        expect(fresh).not.toBe(stale);
        expect(lastToolResults(body).at(-1)).toBe(
          `Failed: Element ref ${stale} is not on the page (it changed since the snapshot): use the refs of the latest snapshot`,
        );
        return { toolCalls: [call('click', { ref: fresh, element: 'Buy' })] };
      },
      (body) => {
        expect(lastObservation(body)).toContain('Bought');
        return { text: 'Bought it.' };
      },
    ]);
    const res = await server.request(`/v1/tools/perform-web-task?sessionId=${s.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Buy the offer', url: site.url('/moving'), model: 'claude-other', provider: 'anthropic' }),
    });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.data.result.result).toBe('Bought it.');
    expect(body.data.result.steps.map((x: any) => [x.action, x.ok])).toEqual([
      ['click', true],
      ['click', false],
      ['click', true],
    ]);
    expect(site.beacons).toEqual(['/bought']);
    expect(model.received.every((r) => r.path === '/v1/messages')).toBe(true);
    await endSession(server, s.id);
  });
});

describe('perform-web-task without a model', () => {
  it('answers 503 No LLM provider is configured, before looking at anything else', async () => {
    const server = await startTestServer();
    try {
      const res = await server.request('/v1/tools/perform-web-task?sessionId=00000000-0000-4000-8000-000000000000', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'anything' }),
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: { code: 503, message: 'No LLM provider is configured' } });
    } finally {
      await server.close();
    }
  });
});

describe('perform-web-task where private networks are refused', () => {
  it('a start URL on a private or loopback address answers 403 before any session or model is involved', async () => {
    const model = await startScriptedModel();
    const server = await startTestServer({
      env: { ALLOW_PRIVATE_NETWORKS: 'false', LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_MODEL: 'm' },
    });
    try {
      for (const url of ['http://127.0.0.1:8080/admin', 'http://10.1.2.3/', 'http://[::1]/']) {
        const res = await server.request('/v1/tools/perform-web-task', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ prompt: 'x', url }),
        });
        expect(res.status, url).toBe(403);
        expect(((await res.json()) as any).error.message).toMatch(/private|loopback/i);
      }
      expect(model.received).toHaveLength(0);
      const [{ n }] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
      expect(n).toBe(0);
    } finally {
      await server.close();
      await model.close();
    }
  });
});
