// The console in a real browser: Playwright's Chromium signs in to the running test server
// with an API key and walks every page with real data (sessions started, tagged, ended and
// recorded by real Chromium; a batch; a webhook with a local receiver; a profile; an
// extension; the usage series); the embedded live view receives frames and takes over a
// read-only session; the recording plays; a key is created, works, is revoked and then
// answers 401; forms without their CSRF token are refused.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Frame, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zipOfDir } from '../testing/zip-of.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, endSession, HEADLESS } from '../sessions/test-support.js';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { untilPasses } from '../input/test-support.js';
import { createProject } from '../auth/api-keys.js';
import { SESSION_COOKIE } from './auth.js';
import { deployedTask } from '../tasks/test-support.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const extensionFixture = fileURLToPath(new URL('../../fixtures/extensions/marker/', import.meta.url));

/** Pages the sessions open: an animated one whose click sets its title, and a file download. */
async function startSite(): Promise<{ url: (path: string) => string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/file.txt') {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-disposition': 'attachment; filename="report.txt"' });
      return res.end('console download\n');
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><title>Console fixture</title>
<style>html,body{margin:0;height:100%}#all{position:fixed;inset:0;background:#36c;color:#fff;font:40px sans-serif}</style>
<div id="all">tick <span id="n">0</span> <a id="dl" href="/file.txt">file</a></div>
<script>let n = 0; setInterval(() => { document.getElementById('n').textContent = ++n; document.getElementById('all').style.background = n % 2 ? '#36c' : '#c63'; }, 100);
addEventListener('mousedown', () => { document.title = 'clicked'; });</script>`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** The embedded live view's frame, once its page has loaded. */
async function liveFrame(page: Page): Promise<Frame> {
  await page.waitForSelector('iframe#live-view');
  return untilPasses(() => {
    const frame = page.frames().find((f) => f.url().includes('/live/') && f !== page.mainFrame());
    expect(frame).toBeDefined();
    return frame!;
  }, 15_000);
}

describe.each(browserBackends)('web console on %s', (backend) => {
  let server: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let site: Awaited<ReturnType<typeof startSite>>;
  let base: string;
  const ended: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({ backend });
    base = `${server.config.publicUrl}/console`;
    site = await startSite();
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
    context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await site?.close();
  });

  it('sends a visitor to the sign-in page, refuses a wrong key, and signs in with a sealed, HttpOnly, SameSite=Strict cookie', async () => {
    await page.goto(`${base}/sessions`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    await page.fill('input[name=api_key]', 'sk_not_a_key');
    await page.click('button[type=submit]');
    await expect(page.textContent('.notice.error')).resolves.toContain('not valid');

    await page.fill('input[name=api_key]', server.apiKey);
    await page.click('button[type=submit]');
    await page.waitForURL(`${base}/sessions`);
    const cookie = (await context.cookies()).find((c) => c.name === SESSION_COOKIE)!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console', secure: false });
    expect(decodeURIComponent(cookie.value)).not.toContain(server.apiKey);
    expect(decodeURIComponent(cookie.value)).toMatch(/^v1:/);
    // The pages say what they may load: only this server.
    const res = await page.request.get(`${base}/sessions`);
    expect(res.headers()['content-security-policy']).toContain("script-src 'self'");
  });

  it('lists sessions with status, tags, duration and credits, filters them, and shows a new one without a reload', async () => {
    const a = await createSession(server, { ...HEADLESS, session: { ...HEADLESS.session, tags: ['alpha'] } });
    const b = await createSession(server, { ...HEADLESS, session: { ...HEADLESS.session, tags: ['beta'] } });
    await endSession(server, b.id);
    ended.push(b.id);
    await page.goto(`${base}/sessions`);
    const row = (id: string) => page.locator(`tr[data-session="${id}"]`);
    await expect(row(a.id).getAttribute('data-status')).resolves.toBe('running');
    await expect(row(a.id).locator('.tag').textContent()).resolves.toBe('alpha');
    await expect(row(b.id).getAttribute('data-status')).resolves.toBe('completed');
    expect(await row(b.id).locator('td.num').last().textContent()).toMatch(/^\d/);

    await page.goto(`${base}/sessions?tag=beta`);
    expect(await page.locator('tr[data-session]').count()).toBe(1);
    expect(await row(b.id).count()).toBe(1);
    await page.goto(`${base}/sessions?status=running`);
    expect(await row(a.id).count()).toBe(1);
    expect(await row(b.id).count()).toBe(0);

    // Live: a session created while the page is open appears, and one that ends changes status.
    const c = await createSession(server, { ...HEADLESS, session: { ...HEADLESS.session, tags: ['gamma'] } });
    await page.waitForSelector(`tr[data-session="${c.id}"]`, { timeout: 15_000 });
    await endSession(server, a.id);
    ended.push(a.id);
    await page.waitForSelector(`tr[data-session="${a.id}"]`, { state: 'detached', timeout: 15_000 });
    await endSession(server, c.id);
  });

  it('embeds the live view (frames arrive), takes over a read-only session, and shows its pages live', async () => {
    const s = await createSession(server, {
      browser: { headless: { active: true } },
      session: { recording: { active: false }, initial_url: site.url('/'), live_view: { read_only: true } },
    });
    await page.goto(`${base}/sessions/${s.id}`);
    let frame = await liveFrame(page);
    await untilPasses(async () => expect(await frame.evaluate(() => (window as any).__liveView.frames)).toBeGreaterThan(2), 15_000);
    expect(await frame.evaluate(() => (window as any).__liveView.readOnly)).toBe(true);
    await expect(page.locator('#pages').textContent()).resolves.toContain('Console fixture');

    // The session's own live view is read-only; its owner may take over from the console.
    await page.click('#take-over');
    await page.waitForURL(/control=1/);
    frame = await liveFrame(page);
    await untilPasses(async () => expect(await frame.evaluate(() => (window as any).__liveView.status)).toBe('live'), 15_000);
    expect(await frame.evaluate(() => (window as any).__liveView.readOnly)).toBe(false);
    await untilPasses(async () => expect(await frame.evaluate(() => (window as any).__liveView.frames)).toBeGreaterThan(0), 15_000);
    const box = (await frame.locator('canvas').boundingBox())!;
    await frame.locator('canvas').click({ position: { x: box.width / 2, y: box.height / 2 } });
    // The click reached the page (its title changes) and the pages part, refreshed, shows it.
    await page.waitForFunction(() => document.querySelector('#pages')?.textContent?.includes('clicked'), undefined, { timeout: 15_000 });
    await endSession(server, s.id);
  });

  it('watches a one_time_url session without using up its link', async () => {
    const s = await createSession(server, {
      browser: { headless: { active: true } },
      session: { recording: { active: false }, initial_url: site.url('/'), live_view: { one_time_url: true } },
    });
    await page.goto(`${base}/sessions/${s.id}`);
    const frame = await liveFrame(page);
    await untilPasses(async () => expect(await frame.evaluate(() => (window as any).__liveView.frames)).toBeGreaterThan(0), 15_000);
    // The session's own link still opens, once.
    const link = new URL(s.live_view_url);
    const own = `${server.url}${link.pathname}${link.search}`;
    expect((await fetch(own)).status).toBe(200);
    expect((await fetch(own)).status).toBe(401);
    await endSession(server, s.id);
  });

  it('ends a session from its page, then plays its recording and lists its events and downloads', async () => {
    const s = await createSession(server, { browser: { headless: { active: true } }, session: { initial_url: site.url('/') } });
    const started = Date.now();
    // A download from the session's page.
    const cdp = await chromium.connectOverCDP(s.cdp_url);
    const p = cdp.contexts()[0]!.pages()[0]!;
    await p.click('#dl');
    await cdp.close();
    // Until the download is kept (listed once finished): the end below would lose one in progress.
    await untilPasses(async () => {
      const list = (await (await server.request(`/v1/sessions/${s.id}/downloads`)).json()) as any;
      expect(list.data.count).toBe(1);
    }, 15_000);
    // Recording time is the subject: the video played below must last over a second.
    await new Promise((r) => setTimeout(r, Math.max(0, started + 2_000 - Date.now())));

    await page.goto(`${base}/sessions/${s.id}`);
    await page.click('form[action$="/end"] button');
    await page.waitForURL(`${base}/sessions/${s.id}`);
    // The recording appears by itself once encoded.
    await page.waitForSelector('#recording-video', { timeout: 60_000 });
    const played = await page.evaluate(async () => {
      const v = document.getElementById('recording-video') as HTMLVideoElement;
      v.muted = true;
      await new Promise<void>((resolve) => (v.readyState >= 2 ? resolve() : v.addEventListener('loadeddata', () => resolve(), { once: true })));
      await v.play();
      // Until it has played a little (currentTime past 0, checked below), or 10 s.
      await new Promise<void>((resolve) => {
        const limit = setTimeout(() => resolve(), 10_000);
        const advanced = () => {
          if (v.currentTime <= 0) return;
          clearTimeout(limit);
          resolve();
        };
        v.addEventListener('timeupdate', advanced);
        advanced();
      });
      return { readyState: v.readyState, currentTime: v.currentTime, duration: v.duration, error: v.error?.code ?? null };
    });
    expect(played.error).toBeNull();
    expect(played.readyState).toBeGreaterThanOrEqual(2);
    expect(played.currentTime).toBeGreaterThan(0);
    expect(played.duration).toBeGreaterThan(1);

    await page.waitForSelector('#events tr[data-event="session.completed"]', { timeout: 15_000 });
    await page.waitForSelector('#downloads a', { timeout: 15_000 });
    const link = page.locator('#downloads a').first();
    expect(await link.textContent()).toBe('report.txt');
    const file = await page.request.get(new URL((await link.getAttribute('href'))!, page.url()).href);
    expect(file.status()).toBe(200);
    expect(await file.text()).toBe('console download\n');
  }, 120_000);

  it('shows batches with their progress', async () => {
    const res = await server.request('/v1/batch-sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ count: 2, configuration: HEADLESS }),
    });
    expect(res.status).toBeLessThan(300);
    const batchId = (await res.json()).data.batch_id as string;
    await page.goto(`${base}/batches`);
    const row = page.locator(`tr[data-batch="${batchId}"]`);
    expect(await row.count()).toBe(1);
    // The batch's progress is a percentage (BatchDetail.progress): 100 once both items are made.
    await untilPasses(async () => expect(await row.locator('progress').getAttribute('value')).toBe('100'), 60_000);
    // Drawn on its scale: a full bar and "100 %", not a bar full from 1 % and "10000 %".
    expect(await row.locator('progress').getAttribute('max')).toBe('100');
    expect(await row.locator('td', { has: page.locator('progress') }).innerText()).toMatch(/^\s*100 %\s*$/);
    await page.click(`tr[data-batch="${batchId}"] a`);
    await untilPasses(async () => expect(await page.locator('tr[data-session]').count()).toBe(2), 10_000);
    const ids = await page.locator('tr[data-session]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-session')!));
    for (const id of ids) await endSession(server, id);
  }, 90_000);

  describe('webhooks', () => {
    let receiver: Receiver;
    beforeAll(async () => {
      // The first delivery fails, so there is a failed one to retry by hand.
      receiver = await startReceiver((_req, _body, res, n) => void res.writeHead(n === 1 ? 500 : 200).end());
    });
    afterAll(() => receiver?.close());

    it('lists webhooks and deliveries, sends a test event, and retries a delivery', async () => {
      const made = await server.request('/v1/webhooks', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url, subscribed_events: ['session.completed'] }),
      });
      expect(made.status).toBeLessThan(300);
      const hook = await made.json();
      await page.goto(`${base}/webhooks`);
      await page.click(`a[href="/console/webhooks/${hook.id}"]`);
      await page.selectOption('select[name=event_type]', 'session.failed');
      await page.click('#send-test');
      await expect(page.textContent('.notice.ok')).resolves.toContain('queued');
      await untilPasses(() => expect(receiver.received.length).toBeGreaterThanOrEqual(1), 15_000);
      const first = receiver.received[0]!;
      expect(JSON.parse(first.body).type).toBe('session.failed');
      await page.waitForSelector('tr[data-delivery][data-status="failed"]', { timeout: 15_000 });

      await page.click('tr[data-delivery][data-status="failed"] button');
      await expect(page.textContent('.notice.ok')).resolves.toContain('Retry queued');
      await untilPasses(() => expect(receiver.received.length).toBeGreaterThanOrEqual(2), 15_000);
      // The same event, signed again, as the next attempt.
      expect(receiver.received[1]!.headers['webhook-id']).toBe(first.headers['webhook-id']);
      await page.waitForSelector('tr[data-delivery][data-status="succeeded"]', { timeout: 15_000 });

      // A delivery that succeeded goes again, as one more attempt, when retried.
      const attempts = () => page.locator('tr[data-delivery]').count();
      const before = await attempts();
      const received = receiver.received.length;
      await page.click('tr[data-delivery][data-status="succeeded"] button');
      await untilPasses(() => expect(receiver.received.length).toBeGreaterThan(received), 15_000);
      expect(receiver.received.at(-1)!.headers['webhook-id']).toBe(first.headers['webhook-id']);
      await untilPasses(async () => expect(await attempts()).toBe(before + 1), 15_000);
    }, 60_000);
  });

  it('draws credits per day from the usage series', async () => {
    await page.goto(`${base}/usage`);
    const bars = page.locator('svg.chart rect.bar');
    expect(await bars.count()).toBe(30);
    const today = new Date().toISOString().slice(0, 10);
    const [{ credits }] = await server.db.query<{ credits: number }>(
      `SELECT coalesce(sum(credits_used), 0)::float8 AS credits FROM sessions WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'`,
    );
    expect(credits).toBeGreaterThan(0);
    expect(Number(await bars.last().getAttribute('data-value'))).toBeCloseTo(credits, 6);
    expect(await bars.last().getAttribute('data-date')).toBe(today);
    expect(Number(await bars.last().getAttribute('height'))).toBeGreaterThan(0);
  });

  it('lists profiles and extensions', async () => {
    const s = await createSession(server, HEADLESS);
    const made = await server.request('/v1/profiles', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'console-profile', source: 'session', session_id: s.id }),
    });
    expect(made.status).toBeLessThan(300);
    await endSession(server, s.id);
    const form = new FormData();
    form.set('name', 'Marker');
    form.set('file', new Blob([new Uint8Array(await zipOfDir(extensionFixture))], { type: 'application/zip' }), 'marker.zip');
    const up = await server.request('/v1/extensions', { method: 'POST', body: form });
    expect(up.status).toBeLessThan(300);

    await page.goto(`${base}/profiles`);
    await expect(page.locator('#profiles').textContent()).resolves.toContain('console-profile');
    await page.goto(`${base}/extensions`);
    await expect(page.locator('main').textContent()).resolves.toContain('Marker');
  });

  // Its wait for the run (up to 60 s: a sandbox and a browser started on a loaded machine)
  // must fit in the test's own time.
  it("lists tasks, and a task's runs with their status and output", { timeout: 120_000 }, async () => {
    // Not recorded: the console lists the run, and a recording is encoded for nothing.
    const taskId = await deployedTask(server, 'export default async function run(ctx: any) { return { answer: 42 }; }\n', { recording: { active: false } });
    const run = await server.request(`/v2/tasks/${taskId}/run`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input_params: {} }),
    });
    expect(run.status).toBeLessThan(300);
    const runId = ((await run.json()) as any).run_id as string;
    await untilPasses(async () => expect(((await (await server.request(`/v2/tasks/runs/${runId}/status`)).json()) as any).status).toBe('success'), 60_000);
    await page.goto(`${base}/tasks`);
    await page.click(`a[href="/console/tasks/${taskId}"]`);
    await page.waitForURL(`${base}/tasks/${taskId}`);
    const row = page.locator('#runs tbody tr').first();
    await expect(row.textContent()).resolves.toContain('success');
    await expect(row.textContent()).resolves.toContain('{"answer":42}');
    expect((await page.goto(`${base}/tasks/00000000-0000-4000-8000-000000000000`))!.status()).toBe(404);
  });

  it('creates a key shown once, which works until it is revoked, then answers 401', async () => {
    await page.goto(`${base}/keys`);
    await page.fill('input[name=name]', 'from-console');
    await page.click('#create-key');
    const key = (await page.textContent('#new-key'))!.trim();
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    const billing = (k: string) => fetch(`${server.url}/v1/billing`, { headers: { 'service-api-key': k } }).then((r) => r.status);
    expect(await billing(key)).toBe(200);
    // Shown once: the list has its prefix only.
    await page.goto(`${base}/keys`);
    expect(await page.locator('#new-key').count()).toBe(0);
    expect(await page.content()).not.toContain(key);
    const row = page.locator('tr[data-key]', { hasText: 'from-console' });
    await expect(row.locator('td.mono').textContent()).resolves.toBe(`${key.slice(0, 7)}…`);
    await row.locator('button').click();
    await expect(page.textContent('.notice.ok')).resolves.toContain('revoked');
    expect(await billing(key)).toBe(401);
    await expect(page.locator('tr[data-key]', { hasText: 'from-console' }).textContent()).resolves.toContain('revoked');
  });

  it("opens the page an event's session_dashboard_url names", async () => {
    const [event] = await server.db.query<{ data: { session_dashboard_url: string; session_id: string } }>(
      `SELECT data FROM events WHERE type = 'session.completed' AND NOT test ORDER BY seq DESC LIMIT 1`,
    );
    const url = event!.data.session_dashboard_url;
    expect(url).toBe(`${base}/sessions/${event!.data.session_id}`);
    await page.goto(url);
    expect(await page.textContent('h1')).toContain(event!.data.session_id);
    await expect(page.locator('#facts .badge').first().textContent()).resolves.toBe('completed');
  });

  it("shows another project nothing of this one's", async () => {
    const other = await createProject(server.db, { name: 'other', source: 'test' });
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await p.goto(`${base}/sign-in`);
    await p.fill('input[name=api_key]', other.key);
    await p.click('button[type=submit]');
    await p.waitForURL(`${base}/sessions`);
    expect(await p.locator('tr[data-session]').count()).toBe(0);
    const mine = (await server.db.query<{ id: string }>('SELECT id FROM sessions ORDER BY created_at LIMIT 1'))[0]!.id;
    expect((await p.goto(`${base}/sessions/${mine}`))!.status()).toBe(404);
    // Nor may it revoke this project's keys, with its own valid CSRF token.
    await p.goto(`${base}/keys`);
    const csrf = await p.locator('input[name=_csrf]').first().getAttribute('value');
    const [bootstrap] = await server.db.query<{ id: string }>(`SELECT id FROM api_keys WHERE project_id <> $1 AND revoked_at IS NULL LIMIT 1`, [
      other.projectId,
    ]);
    const res = await p.request.post(`${base}/keys/${bootstrap!.id}/revoke`, { form: { _csrf: csrf! } });
    expect(res.status()).toBe(404);
    expect((await server.request('/v1/billing')).status).toBe(200);
    await ctx.close();
  });

  it('refuses a POST without the CSRF token, or with another token', async () => {
    const before = (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys'))[0]!.n;
    // The browser's own cookie goes with these requests: only the token is missing or wrong.
    const none = await page.request.post(`${base}/keys`, { form: { name: 'forged' } });
    expect(none.status()).toBe(403);
    expect(await none.text()).toContain('CSRF');
    const wrong = await page.request.post(`${base}/keys`, { form: { name: 'forged', _csrf: 'not-the-token' } });
    expect(wrong.status()).toBe(403);
    const json = await page.request.post(`${base}/keys`, { data: { name: 'forged' } });
    expect(json.status()).toBe(403);
    expect((await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys'))[0]!.n).toBe(before);
    // The sign-in form has its own token too.
    const signIn = await page.request.post(`${base}/sign-in`, { form: { api_key: server.apiKey } });
    expect(signIn.status()).toBe(403);
  });

  it('signs out, and a revoked key signs its console out', async () => {
    await page.goto(`${base}/sessions`);
    await page.click('header form button');
    await page.waitForURL(/\/console\/sign-in/);
    await page.goto(`${base}/sessions`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');

    const made = await fetch(`${server.url}/console/sign-in`);
    expect(made.status).toBe(200);
    // A second key of the project, signed in, then revoked from another console.
    await page.goto(`${base}/sign-in`);
    await page.fill('input[name=api_key]', server.apiKey);
    await page.click('button[type=submit]');
    await page.goto(`${base}/keys`);
    await page.fill('input[name=name]', 'short-lived');
    await page.click('#create-key');
    const key = (await page.textContent('#new-key'))!.trim();
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await otherPage.goto(`${base}/sign-in`);
    await otherPage.fill('input[name=api_key]', key);
    await otherPage.click('button[type=submit]');
    await otherPage.waitForURL(`${base}/sessions`);
    await page.locator('tr[data-key]', { hasText: 'short-lived' }).locator('button').click();
    await otherPage.goto(`${base}/sessions`);
    expect(new URL(otherPage.url()).pathname).toBe('/console/sign-in');
    await other.close();
  });
});
