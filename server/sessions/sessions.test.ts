// The Sessions API against the real server over HTTP, on every database backend: create,
// the record, tags, listing, history, pages, DELETE and the session.completed it records,
// a browser that dies, and input that must be refused without starting a browser.
import { randomUUID } from 'node:crypto';
import { chromium } from 'playwright-core';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { createProject } from '../auth/api-keys.js';
import * as store from './store.js';
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
      const unknown = await server.request(`/v1/sessions/${randomUUID()}/tags`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"tags":["x"]}' });
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual({ error: { code: 404, message: expect.any(String) } });
      // None of the refused puts changed anything.
      expect(await tagsOf(server, id)).toEqual([]);
    } finally {
      await endSession(server, id);
    }
  });

  it('lists with filters (status, tags, created_from, created_to, batch_id) and pagination, newest first', async () => {
    // A server of its own, so that the listing holds exactly what this test made.
    const own = await startTestServer({ backend });
    try {
      const a = await createSession(own, headless({ tags: ['red', 'round'] }));
      const b = await createSession(own, headless({ tags: ['red', 'square'] }));
      // Rows of an earlier day and of a batch, written as the batch worker would.
      const project = (await sessionRow(own.db, a.id))!.project_id as string;
      const batchId = randomUUID();
      const old = randomUUID();
      const batched = randomUUID();
      for (const [id, batch] of [[old, undefined], [batched, batchId]] as const) {
        await store.insertSession(own.db, { id, projectId: project, nodeId: 'elsewhere', configuration: {}, tags: ['archived'], cdpToken: 't', liveViewToken: 'l', batchId: batch });
      }
      await own.db.query(`UPDATE sessions SET created_at = '2025-01-01T12:00:00Z', status = 'completed', ended_at = '2025-01-01T12:05:00Z', end_reason = 'api' WHERE id = $1`, [old]);
      await own.db.query(`UPDATE sessions SET created_at = now() - interval '1 hour', status = 'failed', ended_at = now(), end_reason = 'launch_failed' WHERE id = $1`, [batched]);

      const ids = async (query: string) => {
        const res = await own.request(`/v1/sessions${query}`);
        expect(res.status, query).toBe(200);
        const body = await res.json();
        return { ids: body.data.map((s: { id: string }) => s.id) as string[], pagination: body.pagination };
      };
      const all = await ids('');
      expect(all.ids).toEqual([b.id, a.id, batched, old]);
      expect(all.pagination).toEqual({ page: 1, limit: 20, total: 4, total_pages: 1 });
      expect((await ids('?status=running')).ids).toEqual([b.id, a.id]);
      expect((await ids('?status=completed')).ids).toEqual([old]);
      expect((await ids('?status=failed')).ids).toEqual([batched]);
      expect((await ids('?status=starting')).ids).toEqual([]);
      expect((await ids('?tags=red')).ids).toEqual([b.id, a.id]);
      expect((await ids('?tags=red&tags=round')).ids).toEqual([a.id]);
      expect((await ids('?tags=square,red')).ids).toEqual([b.id]);
      expect((await ids('?tags=red,archived')).ids).toEqual([]);
      expect((await ids('?created_to=2025-06-01T00:00:00Z')).ids).toEqual([old]);
      expect((await ids('?created_from=2025-06-01T00:00:00Z')).ids).toEqual([b.id, a.id, batched]);
      expect((await ids('?created_from=2025-01-01T12:00:00Z&created_to=2025-01-01T12:00:01Z')).ids).toEqual([old]);
      expect((await ids(`?batch_id=${batchId}`)).ids).toEqual([batched]);
      expect((await ids(`?batch_id=${randomUUID()}`)).ids).toEqual([]);

      const p1 = await ids('?limit=3');
      const p2 = await ids('?limit=3&page=2');
      expect(p1.ids).toEqual([b.id, a.id, batched]);
      expect(p2.ids).toEqual([old]);
      expect(p2.pagination).toEqual({ page: 2, limit: 3, total: 4, total_pages: 2 });
      expect((await ids('?limit=3&page=9')).ids).toEqual([]);

      for (const bad of ['?status=paused', '?limit=0', '?page=0', '?created_from=yesterday', '?batch_id=nope', '?limit=101']) {
        const res = await own.request(`/v1/sessions${bad}`);
        expect(res.status, bad).toBe(400);
        expect((await res.json()).error.code).toBe(400);
      }
      // Every item is a full record.
      const full = (await (await own.request('/v1/sessions?limit=1')).json()).data[0];
      expect(Object.keys(full).sort()).toEqual(
        ['cdp_url', 'configuration', 'created_at', 'credits_used', 'duration', 'end_reason', 'ended_at', 'id', 'live_view_url', 'network_bytes_total', 'proxy_bytes', 'screenshots', 'status', 'steps', 'tags'].sort(),
      );
      await endSession(own, a.id);
      await endSession(own, b.id);
      expect((await ids('')).ids).toEqual([batched, old]);
    } finally {
      await own.close();
    }
  });

  it('GET /v1/sessions/all/status lists {session_id, status, tags, created_at} with the vendor filters; DELETE /v1/sessions/all ends every running session of the project and none of another', async () => {
    const own = await startTestServer({ backend });
    try {
      const asOther = (key: string) => ({ request: (p: string, init: RequestInit = {}) => fetch(own.url + p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': key } }) });
      const a = await createSession(own, headless({ tags: ['red'] }));
      const b = await createSession(own, headless({ tags: ['red', 'blue'] }));
      const project = (await sessionRow(own.db, a.id))!.project_id as string;
      // An ended session created with the options the other filters look at, as a row.
      const old = randomUUID();
      const configuration = { session: { proxy: { active: true, type: 'custom' as const, server: 'http://p.example:8080' } }, browser: { extra_stealth: { active: true }, profile: { name: 'Shop Main' } } };
      await store.insertSession(own.db, { id: old, projectId: project, nodeId: 'elsewhere', configuration, tags: ['green'], cdpToken: 't', liveViewToken: 'l' });
      await own.db.query(`UPDATE sessions SET created_at = '2025-01-01T12:00:00Z', status = 'completed', ended_at = '2025-01-01T12:05:00Z', end_reason = 'api', domains = '["example.com", "shop.example"]' WHERE id = $1`, [old]);
      const other = await createProject(own.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
      const c = await createSession(asOther(other.key), HEADLESS);

      const statuses = async (query: string) => {
        const res = await own.request(`/v1/sessions/all/status${query}`);
        expect(res.status, query).toBe(200);
        return (await res.json()).data as { count: number; items: { session_id: string; status: string; tags: string[]; created_at: string }[] };
      };
      const all = await statuses('');
      expect(all.count).toBe(3);
      expect(all.items.map((i) => i.session_id)).toEqual([b.id, a.id, old]);
      expect(all.items[0]).toEqual({ session_id: b.id, status: 'running', tags: ['red', 'blue'], created_at: expect.any(String) });
      expect((await statuses('?tags=red')).items.map((i) => i.session_id)).toEqual([b.id, a.id]);
      expect((await statuses('?tags=red,blue')).count).toBe(1);
      expect((await statuses('?domains=example.com')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?domains=example.com,other.example')).count).toBe(0);
      expect((await statuses('?proxy=true')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?proxy=false')).items.map((i) => i.session_id)).toEqual([b.id, a.id]);
      expect((await statuses('?extra_stealth=true')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?profile_name=shop')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await statuses('?profile_name=home')).count).toBe(0);
      expect((await statuses('?created_to=2025-06-01T00:00:00Z')).items.map((i) => i.session_id)).toEqual([old]);
      expect((await own.request('/v1/sessions/all/status?proxy=maybe')).status).toBe(400);
      expect((await fetch(`${own.url}/v1/sessions/all/status`)).status).toBe(401);

      const ended = await own.request('/v1/sessions/all', { method: 'DELETE' });
      expect(ended.status).toBe(200);
      expect(await ended.json()).toEqual({ data: { status: 'completed', ended: 2 } });
      for (const id of [a.id, b.id]) {
        expect((await getSession(own, id)).status).toBe(404);
        expect((await sessionRow(own.db, id))!.status).toBe('completed');
        expect((await sessionEvents(own.db, id)).map((e) => e.type)).toEqual(['session.completed']);
      }
      // The other project's session runs on; this project has nothing left to end.
      expect((await sessionRow(own.db, c.id))!.status).toBe('running');
      expect(await (await own.request('/v1/sessions/all', { method: 'DELETE' })).json()).toEqual({ data: { status: 'completed', ended: 0 } });
      expect((await statuses('')).items.map((i) => i.session_id)).toEqual([old]);
      await endSession(asOther(other.key), c.id);
    } finally {
      await own.close();
    }
  });

  it('history: the requested metrics per period of the granularity, a summary, and deleted sessions still counted', async () => {
    const own = await startTestServer({ backend });
    try {
      const a = await createSession(own, HEADLESS);
      const b = await createSession(own, HEADLESS);
      await endSession(own, a.id);
      const project = (await sessionRow(own.db, b.id))!.project_id as string;
      const older = randomUUID();
      await store.insertSession(own.db, { id: older, projectId: project, nodeId: 'elsewhere', configuration: {}, tags: [], cdpToken: 't', liveViewToken: 'l' });
      await own.db.query(
        `UPDATE sessions SET created_at = now() - interval '3 days', ended_at = now() - interval '3 days' + interval '30 minutes', status = 'completed', network_bytes_total = 1000, screenshots = 2 WHERE id = $1`,
        [older],
      );

      const get = async (query: string) => {
        const res = await own.request(`/v1/sessions/history${query}`);
        return { status: res.status, body: await res.json() };
      };
      const day = await get('?granularity=day&metrics=session_count,screenshots');
      expect(day.status).toBe(200);
      // 30 days by default: one item per day, each with the date and exactly the metrics asked.
      expect(day.body.pagination.total).toBeGreaterThanOrEqual(30);
      for (const point of day.body.data) expect(Object.keys(point).sort()).toEqual(['date', 'screenshots', 'session_count']);
      expect(day.body.summary).toEqual({ session_count: 3, screenshots: 2 });
      const all = await get(`?granularity=day&limit=100`);
      const nonEmpty = all.body.data.filter((p: { session_count: number }) => p.session_count > 0);
      expect(nonEmpty.map((p: { session_count: number }) => p.session_count)).toEqual([1, 2]);
      expect(nonEmpty[0].network_bytes_total).toBe(1000);
      expect(nonEmpty[0].session_hours).toBeCloseTo(0.5, 5);
      expect(Object.keys(all.body.summary).sort()).toEqual(['credits_used', 'network_bytes_total', 'proxy_bytes', 'screenshots', 'session_count', 'session_hours']);
      for (const p of all.body.data) expect(new Date(p.date).getUTCHours()).toBe(0);

      const from = new Date(Date.now() - 2 * 3_600_000).toISOString();
      const hour = await get(`?from_date=${from}&granularity=hour&metrics=session_count`);
      expect(hour.status).toBe(200);
      expect(hour.body.data.length).toBeGreaterThanOrEqual(2);
      expect(hour.body.summary).toEqual({ session_count: 2 }); // the deleted one included
      const week = await get('?granularity=week&metrics=session_count');
      for (const p of week.body.data) expect(new Date(p.date).getUTCDay()).toBe(1); // Mondays

      for (const bad of ['?metrics=bogus', '?granularity=year', `?from_date=${new Date().toISOString()}&to_date=${from}`, '?from_date=2000-01-01T00:00:00Z&granularity=hour']) {
        const res = await get(bad);
        expect(res.status, bad).toBe(400);
        expect(res.body.error.code).toBe(400);
      }
      await endSession(own, b.id);
    } finally {
      await own.close();
    }
  });

  it('a browser that dies ends its session as failed with session.failed (browser_unreachable) within five seconds, leaving nothing', async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    const root = rootOf(browsersDir, id);
    const killedAt = Date.now();
    process.kill(root.owner.pids[0]!, 'SIGKILL');
    const row = await eventually(async () => {
      const r = await sessionRow(server.db, id);
      return r?.status === 'failed' ? r : undefined;
    }, 5_000, 'the session to fail');
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    expect(row!.end_reason).toBe('browser_unreachable');
    const events = await sessionEvents(server.db, id);
    expect(events.map((e) => e.type)).toEqual(['session.failed']);
    expect(events[0]!.data).toEqual({ session_id: id, duration_ms: expect.any(Number), reason: 'browser_unreachable', session_dashboard_url: expect.any(String) });
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
      [{ browser: { captcha_solver: { active: true } }, session: { proxy: { active: false, type: 'custom', server: 'http://127.0.0.1:9' } } }, 400, /requires an active proxy/i],
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

describe('limits', () => {
  it('MAX_CONCURRENT_BROWSERS: past it 429 with the general body, also for concurrent requests; a slot frees when a session ends', async () => {
    const server = await startTestServer({ env: { MAX_CONCURRENT_BROWSERS: '2' } });
    try {
      const results = await Promise.all([1, 2, 3].map(() => postSession(server, HEADLESS)));
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status !== 200);
      expect(ok).toHaveLength(2);
      expect(refused.map((r) => r.status)).toEqual([429]);
      expect(refused[0]!.body).toEqual({ error: { code: 429, message: expect.stringMatching(/concurrent browser limit/i) } });
      expect(processesUnder(browsersDirFor(server.config.dataDir)).length).toBeGreaterThan(0);
      expect(entries(browsersDirFor(server.config.dataDir)).filter((n) => n.startsWith('s-'))).toHaveLength(2);

      await endSession(server, ok[0]!.body.data.id);
      const again = await postSession(server, HEADLESS);
      expect(again.status).toBe(200);
      await Promise.all([ok[1]!.body.data.id, again.body.data.id].map((id) => endSession(server, id)));
    } finally {
      await server.close();
    }
  });

  it('SESSION_CREATE_RATE_PER_MINUTE: past it 429 "Session creation rate limit exceeded" with Retry-After, per API key', async () => {
    const server = await startTestServer({ env: { SESSION_CREATE_RATE_PER_MINUTE: '2' } });
    try {
      // Refused input does not spend the allowance.
      expect((await postSession(server, { browser: { captcha_solver: { active: true } } })).status).toBe(400);
      const a = await createSession(server, HEADLESS);
      const b = await createSession(server, HEADLESS);
      const third = await postSession(server, HEADLESS);
      expect(third.status).toBe(429);
      expect(third.body).toEqual({ error: { code: 429, message: 'Session creation rate limit exceeded' } });
      const retryAfter = Number(third.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Another key has its own allowance.
      const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
      const otherKey = other.key!;
      const c = await postSession({ request: (p, init = {}) => fetch(server.url + p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': otherKey } }) }, HEADLESS);
      expect(c.status).toBe(200);
      await Promise.all([a.id, b.id].map((id) => endSession(server, id)));
      await fetch(`${server.url}/v1/sessions/${c.body.data.id}`, { method: 'DELETE', headers: { 'service-api-key': otherKey } });
    } finally {
      await server.close();
    }
  });
});
