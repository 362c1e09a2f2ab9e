// The Sessions API against the real server over HTTP, on every database backend: create,
// the record, tags, pages, DELETE and the session.completed it records, a browser that dies,
// and input that must be refused without starting a browser. Listing and history are in
// listing.test.ts, the creation limits in limits.test.ts.
import { randomUUID } from 'node:crypto';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import {
  HEADLESS,
  browsersDirFor,
  headless,
  createSession,
  endSession,
  entries,
  eventually,
  getSession,
  gone,
  postSession,
  processesUnder,
  rootOf,
  sessionEvents,
  sessionRow,
  startPageServer,
  tryWebSocket,
  type PageServer,
} from './test-support.js';

const tagsOf = async (server: TestServer, id: string) => (await getSession(server, id)).body.data.tags;

describe.each(backends)('sessions API on %s', (backend) => {
  let server: TestServer;
  let pages: PageServer;
  let browsersDir: string;

  beforeAll(async () => {
    server = await startTestServer({ backend });
    pages = await startPageServer();
    browsersDir = browsersDirFor(server.config.dataDir);
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  it('creates a session with its options, answers its record and pages, and DELETE ends it with session.completed and nothing left', async () => {
    const body = {
      session: { initial_url: pages.url('/'), tags: ['checkout', 'nightly'], timeout: { max_duration: 30, idle_timeout: 10 }, recording: { active: false } },
      browser: { headless: { active: true }, viewport: { width: 1024, height: 700 } },
    };
    const created = await postSession(server, body);
    expect(created.status).toBe(200);
    expect(Object.keys(created.body)).toEqual(['data']);
    expect(Object.keys(created.body.data).sort()).toEqual(['cdp_url', 'id', 'live_view_url']);
    const { id, cdp_url, live_view_url } = created.body.data;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    // Our own WebSocket endpoint, authorised by a token of the session, never the API key.
    const cdp = new URL(cdp_url);
    expect(cdp.protocol).toBe('ws:');
    expect(cdp.port).toBe(new URL(server.url).port);
    expect(cdp.pathname).toBe(`/v1/cdp/${id}`);
    const token = cdp.searchParams.get('token')!;
    expect(token.length).toBeGreaterThanOrEqual(32);
    expect(cdp_url).not.toContain(server.apiKey);
    expect(live_view_url).not.toContain(server.apiKey);
    expect(new URL(live_view_url).searchParams.get('token')).not.toBe(token);

    const record = await getSession(server, id);
    expect(record.status).toBe(200);
    expect(record.body.data).toMatchObject({
      id,
      status: 'running',
      ended_at: null,
      end_reason: null,
      tags: ['checkout', 'nightly'],
      configuration: body,
      cdp_url,
      live_view_url,
      proxy_bytes: 0,
      steps: 0,
      screenshots: 0,
    });
    expect(record.body.data.duration).toBeGreaterThanOrEqual(0);
    expect(Date.parse(record.body.data.created_at)).toBeLessThanOrEqual(Date.now());

    // initial_url is open when the creation answers.
    const listed = await server.request(`/v1/sessions/${id}/pages`);
    expect(listed.status).toBe(200);
    expect((await listed.json()).data).toEqual([{ id: expect.any(String), url: pages.url('/'), title: 'Home', active: true }]);

    // Some automation: a screenshot, a navigation, a second page.
    const browser = await chromium.connectOverCDP(cdp_url);
    const context = browser.contexts()[0]!;
    const first = context.pages()[0]!;
    expect(await first.evaluate(() => [innerWidth, innerHeight])).toEqual([1024, 700]);
    await first.screenshot();
    const second = await context.newPage();
    await second.goto(pages.url('/second'));
    const two = (await (await server.request(`/v1/sessions/${id}/pages`)).json()).data;
    expect(two.map((p: { url: string }) => p.url).sort()).toEqual([pages.url('/'), pages.url('/second')].sort());
    expect(two.filter((p: { active: boolean }) => p.active)).toHaveLength(1);
    await browser.close();

    const root = rootOf(browsersDir, id);
    expect(gone(root).processes.length).toBeGreaterThan(0);

    const ended = await endSession(server, id);
    expect(ended.status).toBe(200);
    expect(await ended.json()).toEqual({ data: { status: 'completed' } });

    // The event is there as soon as the answer is (same transaction as the row).
    const events = await sessionEvents(server.db, id);
    expect(events.map((e) => e.type)).toEqual(['session.completed']);
    const data = events[0]!.data;
    expect(Object.keys(data).sort()).toEqual(
      ['domains', 'duration_ms', 'network_bytes_total', 'proxy_bytes', 'reason', 'screenshots', 'session_dashboard_url', 'session_id', 'steps'].sort(),
    );
    expect(data).toMatchObject({ session_id: id, reason: 'api', proxy_bytes: 0, screenshots: 1 });
    expect(Number.isInteger(data.duration_ms) && data.duration_ms > 0).toBe(true);
    expect(data.network_bytes_total).toBeGreaterThan(0);
    expect(data.steps).toBeGreaterThan(5);
    // Chromium's own calls to Google hosts may be listed too: ours must be.
    expect(data.domains).toContain('127.0.0.1');
    expect(new Set(data.domains).size).toBe(data.domains.length);
    expect(data.session_dashboard_url).toBe(`${server.config.publicUrl}/console/sessions/${id}`);
    expect(events[0]!.text).toMatch(/\S/);

    const row = (await sessionRow(server.db, id))!;
    expect(row).toMatchObject({ status: 'completed', end_reason: 'api', screenshots: 1 });
    expect(row.ended_at).toBeInstanceOf(Date);
    expect(row.deleted_at).toBeInstanceOf(Date);
    expect(row.network_bytes_total).toBe(data.network_bytes_total);

    // Browser closed, root removed, tokens revoked.
    expect(gone(root)).toEqual({ processes: [], directory: false });
    expect(await tryWebSocket(cdp_url)).toBe(404);
    expect((await fetch(`${server.url}/v1/cdp/${id}/json/version?token=${token}`)).status).toBe(404);

    // Gone from the API (design decision in the contract), still in history.
    expect((await getSession(server, id)).status).toBe(404);
    expect((await endSession(server, id)).status).toBe(404);
    const tags = await server.request(`/v1/sessions/${id}/tags`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"tags":["x"]}' });
    expect(tags.status).toBe(404);
    expect((await server.request(`/v1/sessions/${id}/pages`)).status).toBe(404);
    const list = await (await server.request('/v1/sessions?limit=100')).json();
    expect(list.data.map((s: { id: string }) => s.id)).not.toContain(id);
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const history = await (await server.request(`/v1/sessions/history?from_date=${from}&granularity=hour&metrics=session_count`)).json();
    expect(history.summary.session_count).toBeGreaterThanOrEqual(1);
  });

  it('PUT tags replaces every tag in order; a second put replaces the first; errors are 400, 401, 404', async () => {
    const { id } = await createSession(server, headless({ tags: ['a', 'b'] }));
    try {
      const put = (tags: unknown, headers: Record<string, string> = {}) =>
        server.request(`/v1/sessions/${id}/tags`, { method: 'PUT', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(tags) });

      const first = await put({ tags: ['zeta', 'alpha', 'mid'] });
      expect(first.status).toBe(200);
      const answer = await first.json();
      expect(answer).toEqual({ success: true, message: expect.any(String) });
      expect(await tagsOf(server, id)).toEqual(['zeta', 'alpha', 'mid']);

      expect((await put({ tags: ['second'] })).status).toBe(200);
      expect(await tagsOf(server, id)).toEqual(['second']);
      // Repeated tags are kept as given (an ordered list, not a set).
      expect((await put({ tags: ['b', 'a', 'b'] })).status).toBe(200);
      expect(await tagsOf(server, id)).toEqual(['b', 'a', 'b']);
      expect((await put({ tags: [] })).status).toBe(200);
      expect(await tagsOf(server, id)).toEqual([]);

      for (const bad of [{}, { tags: 'a' }, { tags: [1] }, { tags: [''] }, { tags: ['x'], extra: 1 }]) {
        const res = await put(bad);
        expect(res.status, JSON.stringify(bad)).toBe(400);
        expect((await res.json()).error.code).toBe(400);
      }
      const tooMany = await put({ tags: Array.from({ length: 65 }, (_, i) => `t${i}`) });
      expect(tooMany.status).toBe(400);
      for (const headers of [{ 'service-api-key': 'sk_wrong_key_0123456789' }, { 'service-api-key': '' }]) {
        const res = await put({ tags: ['x'] }, headers);
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({ error: { code: 401, message: expect.any(String) } });
      }
      const unknown = await server.request(`/v1/sessions/${randomUUID()}/tags`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: '{"tags":["x"]}',
      });
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual({ error: { code: 404, message: expect.any(String) } });
      // None of the refused puts changed anything.
      expect(await tagsOf(server, id)).toEqual([]);
    } finally {
      await endSession(server, id);
    }
  });

  it('a browser that dies ends its session as failed with session.failed (browser_unreachable) within five seconds, leaving nothing', async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    const root = rootOf(browsersDir, id);
    const killedAt = Date.now();
    process.kill(root.owner.pids[0]!, 'SIGKILL');
    const row = await eventually(
      async () => {
        const r = await sessionRow(server.db, id);
        return r?.status === 'failed' ? r : undefined;
      },
      5_000,
      'the session to fail',
    );
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    expect(row!.end_reason).toBe('browser_unreachable');
    const events = await sessionEvents(server.db, id);
    expect(events.map((e) => e.type)).toEqual(['session.failed']);
    expect(events[0]!.data).toEqual({
      session_id: id,
      duration_ms: expect.any(Number),
      reason: 'browser_unreachable',
      session_dashboard_url: expect.any(String),
    });
    await eventually(() => !gone(root).directory && gone(root).processes.length === 0, 5_000, 'the root to be removed');
    expect(await tryWebSocket(cdp_url)).toBe(404);
    // Still addressable (it was not deleted): reported failed.
    const record = await getSession(server, id);
    expect(record.body.data).toMatchObject({ status: 'failed', end_reason: 'browser_unreachable' });
    expect(record.body.data.ended_at).not.toBeNull();
    // DELETE of an ended session removes it from the API without a second event.
    expect(await (await endSession(server, id)).json()).toEqual({ data: { status: 'failed' } });
    expect((await getSession(server, id)).status).toBe(404);
    expect(await sessionEvents(server.db, id)).toHaveLength(1);
  });

  it('refuses bad input with a 4xx and the general error body, never a 5xx, and never starts a browser', async () => {
    const before = entries(browsersDir);
    const [{ n: rowsBefore }] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    const cases: [unknown, number, RegExp?][] = [
      [{ browser: { captcha_solver: { active: true } } }, 400, /captcha solver requires an active proxy/i],
      [
        { browser: { captcha_solver: { active: true } }, session: { proxy: { active: false, type: 'custom', server: 'http://127.0.0.1:9' } } },
        400,
        /requires an active proxy/i,
      ],
      [{ browser: { viewport: { width: 10, height: 600 } } }, 400],
      [{ browser: { viewport: { width: 'wide' } } }, 400],
      [{ browser: { headless: true } }, 400],
      [{ browser: { nope: {} } }, 400],
      [{ session: { timeout: { idle_timeout: 0 } } }, 400],
      [{ session: { timeout: { max_duration: -2 } } }, 400],
      [{ session: { timeout: { max_duration: 1.5 } } }, 400],
      [{ session: { tags: 'one' } }, 400],
      [{ session: { tags: [''] } }, 400],
      [{ session: { initial_url: 'not a url' } }, 400],
      [{ session: { initial_url: 'file:///etc/passwd' } }, 400, /http or https/],
      [{ session: { initial_url: 'javascript:alert(1)' } }, 400],
      [{ session: { initial_url: 'chrome://settings' } }, 400],
      [{ session: { proxy: { active: true, type: 'service_proxy' } } }, 400, /not configured a proxy pool \(SERVICE_PROXY_POOL\)/],
      [{ session: { proxy: { active: true, type: 'custom', server: 'socks4://127.0.0.1:1080' } } }, 400, /must use http, https or socks5, not socks4/],
      [{ session: { proxy: { active: true, type: 'custom' } } }, 400],
      [{ browser: { profile: { name: 'nobody' } } }, 400, /profile/i],
      [{ browser: { extensions: [randomUUID()] } }, 400, /extension/i],
      [{ identities: [{ id: randomUUID() }] }, 400, /identity/i],
      [{ integrations: [{ id: randomUUID(), type: 'x' }] }, 400, /integration/i],
      [{ extra: true }, 400],
      ['{"session": ', 400, /malformed/i],
      ['[]', 400],
    ];
    for (const [body, status, message] of cases) {
      const res = await postSession(server, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body, JSON.stringify(body)).toEqual({ error: { code: status, message: expect.any(String) } });
      if (message) expect(res.body.error.message).toMatch(message);
    }
    const form = await server.request('/v1/sessions', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(form.status).toBe(415);
    const unauth = await fetch(`${server.url}/v1/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unauth.status).toBe(401);
    expect((await server.request(`/v1/sessions/not-a-uuid`)).status).toBe(400);
    expect((await server.request(`/v1/sessions/${randomUUID()}`)).status).toBe(404);
    expect((await server.request(`/v1/sessions/${randomUUID()}`, { method: 'DELETE' })).status).toBe(404);
    expect((await server.request(`/v1/sessions/${randomUUID()}/pages`)).status).toBe(404);

    expect(entries(browsersDir)).toEqual(before);
    expect(processesUnder(browsersDir)).toEqual([]);
    const [{ n: rowsAfter }] = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions');
    expect(rowsAfter).toBe(rowsBefore);
  });
});
