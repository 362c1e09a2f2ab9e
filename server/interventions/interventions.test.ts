// Interventions through the real server: code in a session asks a person (the service the
// server provides, as an agent or a task run uses it), the person answers through the API
// or in the live view opened from the takeover link in a second browser; time-outs, the
// asker giving up and the session's end; pause and resume of the agent.
import { randomUUID } from 'node:crypto';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, endSession, eventually, sessionEvents, type Requester } from '../sessions/test-support.js';
import { InterventionError } from './index.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false }, live_view: { read_only: true } } };
const EVENTS = ['intervention.requested', 'intervention.resolved'];

describe.each(browserBackends)('interventions on %s', (backend) => {
  let server: TestServer;
  let viewer: Browser;
  let projectId: string;
  beforeAll(async () => {
    server = await startTestServer({ backend });
    [{ project_id: projectId }] = (await server.db.query<{ project_id: string }>('SELECT project_id FROM api_keys LIMIT 1')) as [{ project_id: string }];
    viewer = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--disable-gpu'] });
  });
  afterAll(async () => {
    await viewer?.close();
    await server?.close();
  });

  const call = async (who: Requester, method: string, path: string, body?: unknown) => {
    const res = await who.request(path, {
      method,
      ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const pending = async (id: string) => (await call(server, 'GET', `/v1/sessions/${id}/agent/requested-human-intervention`)).body.data.requests as any[];
  const respond = (id: string, requestId: string, response: string, who: Requester = server) =>
    call(who, 'POST', `/v1/sessions/${id}/agent/respond-to-human-intervention`, { requestId, response });
  const asker = (s: { id: string }) => ({ id: s.id, projectId });

  it('asks, lists the request with a takeover link and fires intervention.requested; the API answer reaches the asker, sealed, and fires intervention.resolved without it', async () => {
    const s = await createSession(server, HEADLESS);
    try {
      const answered = server.services.interventions.ask(asker(s), { message: 'Confirm the purchase of 2 items for 59.90 EUR', inputType: 'confirm' });
      await eventually(async () => (await pending(s.id)).length === 1, 10_000, 'the request to be listed');
      const [r] = await pending(s.id);
      expect(r).toEqual({
        request_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        message: 'Confirm the purchase of 2 items for 59.90 EUR',
        input_type: 'confirm',
        live_view_url: expect.stringMatching(new RegExp(`^${server.config.publicUrl}/live/${s.id}\\?takeover=[A-Za-z0-9_-]{32}$`)),
        created_at: expect.any(String),
      });
      // The answer must fit the request; an unknown request is 404.
      expect(await respond(s.id, r.request_id, 'maybe')).toEqual({
        status: 400,
        body: { error: { code: 400, message: 'A confirm request is answered `yes` or `no`' } },
      });
      expect((await respond(s.id, randomUUID(), 'yes')).status).toBe(404);
      expect(await respond(s.id, r.request_id, 'yes')).toEqual({ status: 200, body: { data: { status: 'resolved' } } });
      expect(await answered).toBe('yes');
      expect(await pending(s.id)).toEqual([]);
      // Answered once only.
      expect((await respond(s.id, r.request_id, 'no')).status).toBe(404);

      const [row] = await server.db.query<{ answer: string }>('SELECT answer FROM interventions WHERE id = $1', [r.request_id]);
      expect(row!.answer).toMatch(/^v1:/);
      const events = await sessionEvents(server.db, s.id, EVENTS);
      expect(events.map((e) => [e.type, e.data])).toEqual([
        [
          'intervention.requested',
          {
            session_id: s.id,
            request_id: r.request_id,
            message: 'Confirm the purchase of 2 items for 59.90 EUR',
            input_type: 'confirm',
            live_view_url: r.live_view_url,
          },
        ],
        ['intervention.resolved', { session_id: s.id, request_id: r.request_id }],
      ]);
    } finally {
      await endSession(server, s.id);
    }
  });

  it('is answered in the live view of the takeover link, which has input in a read-only session; the read-only view shows the request without controls', async () => {
    const s = await createSession(server, HEADLESS);
    const context = await viewer.newContext();
    try {
      const answered = server.services.interventions.ask(asker(s), { message: 'Enter the code we sent to your phone', inputType: 'otp' });
      await eventually(async () => (await pending(s.id)).length === 1, 10_000, 'the request');
      const [r] = await pending(s.id);

      const watching = await context.newPage();
      await watching.goto(s.live_view_url);
      await watching.waitForSelector('#ask:not([hidden])');
      expect(await watching.textContent('#ask p')).toBe('Enter the code we sent to your phone');
      expect(await watching.isDisabled('#ask input')).toBe(true);
      await watching.waitForFunction(() => (window as any).__liveView.status === 'viewonly');

      const takeover = await context.newPage();
      await takeover.goto(r.live_view_url);
      await takeover.waitForFunction(() => (window as any).__liveView.status === 'live');
      await takeover.fill('#ask input', '424242');
      await takeover.click('#ask button');
      expect(await answered).toBe('424242');
      await takeover.waitForSelector('#ask', { state: 'hidden' });
      // The view-only page's own POST is refused by the server, not just hidden by the page.
      const refused = await watching.evaluate(async () => {
        const cfg = JSON.parse(document.getElementById('config')!.textContent!);
        return (await fetch(cfg.interventions, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"request_id":"x","response":"y"}' }))
          .status;
      });
      expect(refused).toBe(403);
      // A takeover link of another session's token does not open this one.
      expect((await fetch(`${server.url}/live/${s.id}?takeover=not-a-token`)).status).toBe(401);
    } finally {
      await context.close();
      await endSession(server, s.id);
    }
  });

  it('a takeover request is done from the live view; confirm offers Yes and No', async () => {
    const s = await createSession(server, HEADLESS);
    const page = await viewer.newPage();
    try {
      const taken = server.services.interventions.ask(asker(s), { message: 'Solve the puzzle in the page, then press Done', inputType: 'takeover' });
      await eventually(async () => (await pending(s.id)).length === 1, 10_000, 'the takeover request');
      await page.goto((await pending(s.id))[0].live_view_url);
      await page.click('#ask button:has-text("Done")');
      expect(await taken).toBe('done');

      const confirmed = server.services.interventions.ask(asker(s), { message: 'Send the form?', inputType: 'confirm' });
      // Wait for this request's own message: the answered takeover's form can still be up
      // (and then be cleared by the page's next poll) when the new request is asked.
      await page.waitForFunction(() => document.querySelector('#ask:not([hidden]) p')?.textContent === 'Send the form?');
      expect(await page.$$eval('#ask button', (b) => b.map((x) => x.textContent))).toEqual(['Yes', 'No']);
      await page.click('#ask button:has-text("No")');
      expect(await confirmed).toBe('no');
    } finally {
      await page.close();
      await endSession(server, s.id);
    }
  });

  it('a request no one answers expires; one the asker withdraws, or whose session ends, is cancelled; each leaves the list', async () => {
    const s = await createSession(server, HEADLESS);
    const expired = server.services.interventions.ask(asker(s), { message: 'Anyone?', inputType: 'text', timeoutMs: 600 });
    await expect(expired).rejects.toMatchObject({ reason: 'expired', message: 'No one answered the request for a person within 1 s' });
    expect(await pending(s.id)).toEqual([]);

    const controller = new AbortController();
    const withdrawn = server.services.interventions.ask(asker(s), { message: 'Still there?', inputType: 'text', signal: controller.signal });
    await eventually(async () => (await pending(s.id)).length === 1, 10_000, 'the request');
    controller.abort();
    await expect(withdrawn).rejects.toBeInstanceOf(InterventionError);
    expect(await pending(s.id)).toEqual([]);

    const orphaned = server.services.interventions.ask(asker(s), { message: 'Last one', inputType: 'text' });
    orphaned.catch(() => {});
    await eventually(async () => (await pending(s.id)).length === 1, 10_000, 'the request');
    await endSession(server, s.id);
    await expect(orphaned).rejects.toMatchObject({ reason: 'cancelled' });
    const [row] = await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM interventions WHERE session_id = $1 AND status = 'pending'`, [s.id]);
    expect(row!.n).toBe(0);
  });

  it("pauses and resumes the agent; answers 404 for an unknown, another project's or a deleted session and 400 once it has ended", async () => {
    const s = await createSession(server, HEADLESS);
    expect(await call(server, 'POST', `/v1/sessions/${s.id}/agent/pause`)).toEqual({ status: 200, body: { data: { status: 'paused' } } });
    let resumed = false;
    const waiting = server.services.interventions.whilePaused(s.id).then(() => (resumed = true));
    // Negative: still waiting after two of whilePaused's looks at the database (every 250 ms).
    await new Promise((r) => setTimeout(r, 600));
    expect(resumed).toBe(false);
    expect(await call(server, 'POST', `/v1/sessions/${s.id}/agent/resume`)).toEqual({ status: 200, body: { data: { status: 'resumed' } } });
    await waiting;
    expect(resumed).toBe(true);

    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    const asOther: Requester = {
      request: (p, init = {}) => server.request(p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': other.key } }),
    };
    for (const path of ['agent/requested-human-intervention', 'agent/pause', 'agent/resume']) {
      const method = path.endsWith('intervention') ? 'GET' : 'POST';
      expect((await call(asOther, method, `/v1/sessions/${s.id}/${path}`)).status).toBe(404);
      expect((await call(server, method, `/v1/sessions/${randomUUID()}/${path}`)).status).toBe(404);
    }
    expect((await respond(s.id, randomUUID(), 'yes', asOther)).status).toBe(404);
    // Ended by the session's own client (Browser.close): not running, 400. (A session ended
    // with DELETE is gone from the API: 404, as everywhere.)
    const client = await chromium.connectOverCDP(s.cdp_url);
    await (await client.newBrowserCDPSession()).send('Browser.close').catch(() => {});
    await client.close().catch(() => {});
    await eventually(async () => (await call(server, 'GET', `/v1/sessions/${s.id}`)).body.data?.status !== 'running', 15_000, 'the session to end');
    expect(await call(server, 'GET', `/v1/sessions/${s.id}/agent/requested-human-intervention`)).toEqual({
      status: 400,
      body: { error: { code: 400, message: 'Session is not running' } },
    });
    expect((await call(server, 'POST', `/v1/sessions/${s.id}/agent/pause`)).status).toBe(400);
    await endSession(server, s.id);
    expect((await call(server, 'POST', `/v1/sessions/${s.id}/agent/pause`)).status).toBe(404);
  });
});
