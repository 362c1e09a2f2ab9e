// Profiles end to end over real HTTP and real Chromium: a session signs in to the fixture
// site through Playwright over cdp_url (a session cookie, a persistent cookie, local storage
// and IndexedDB), a profile is made from it, the session ends, and a new session with the
// profile is still signed in. Around that: the refusals, the listing, project scoping,
// persist (into the same profile and under a new name), the ends a profile is saved on
// (DELETE, the client's Browser.close, idle time-out, the server's graceful stop) and the
// ones it fails on (the browser killed, the server killed).
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import {
  HEADLESS,
  browsersDirFor,
  createSession,
  endSession,
  eventually,
  headless,
  postSession,
  processesUnder,
  rootOf,
  startPageServer,
  type PageServer,
  type Requester,
} from '../sessions/test-support.js';

interface SignedInState {
  cookies: string;
  user: string | null;
  cart: string | null;
}

const SIGNED_IN = {
  cookies: expect.stringMatching(/(?=.*sid=session-cookie-value)(?=.*remember=persistent-cookie-value)/),
  user: 'test-buyer',
  cart: 'cart-42',
};

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => {
  await pages?.close();
});

/** Signs in to the fixture site in the session's first tab, as a user's script would. */
async function signIn(cdpUrl: string, extra?: string): Promise<void> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(pages.url('/login'));
    await page.waitForFunction(() => (window as any).signedIn === true, undefined, { timeout: 10_000 });
    if (extra) await page.evaluate((v) => localStorage.setItem('extra', v), extra);
  } finally {
    await browser.close();
  }
}

/** What the fixture site finds of a sign-in in the session, and its open tabs. */
async function stateOf(cdpUrl: string): Promise<SignedInState & { extra: string | null; tabs: number; viewport: number[] }> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const context = browser.contexts()[0]!;
    const tabs = context.pages().length;
    const page = context.pages()[0]!;
    await page.goto(pages.url('/account'));
    await page.waitForFunction(() => (window as any).state !== undefined, undefined, { timeout: 10_000 });
    return {
      ...(await page.evaluate(() => (window as any).state as SignedInState)),
      extra: await page.evaluate(() => localStorage.getItem('extra')),
      tabs,
      viewport: await page.evaluate(() => [innerWidth, innerHeight]),
    };
  } finally {
    await browser.close();
  }
}

async function call(server: Requester, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await server.request(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, body: await res.json() };
}

const makeProfile = (server: Requester, name: string, sessionId: string, extra: object = {}) =>
  call(server, 'POST', '/v1/profiles', { name, source: 'session', session_id: sessionId, ...extra });

const profile = async (server: Requester, name: string) => (await call(server, 'GET', `/v1/profiles/${encodeURIComponent(name)}`)).body.data;

const settled = (server: Requester, name: string) =>
  eventually(async () => {
    const p = await profile(server, name);
    return p && p.status !== 'pending' ? p : undefined;
  }, 30_000, `profile ${name} to be saved`);

describe.each(browserBackends)('profiles on %s', (backend) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ backend });
    // A session that ends by idle time-out (a whole minute) while the other tests run; the
    // last test looks at its profile.
    const idle = await createSession(server, headless({ timeout: { idle_timeout: 1 } }));
    await signIn(idle.cdp_url);
    expect((await makeProfile(server, 'by-idle', idle.id)).status).toBe(200);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('a profile made from a signed-in session keeps the sign-in (session cookie, persistent cookie, local storage, IndexedDB) for the next session', { timeout: 180_000 }, async () => {
    // Headful (the default), the next one headless: the state does not depend on the mode.
    const first = await createSession(server, { session: { recording: { active: false } } });
    await signIn(first.cdp_url);
    const made = await makeProfile(server, 'shop', first.id, { description: 'Signed in as the test buyer.' });
    expect(made).toEqual({ status: 200, body: { data: { status: 'pending' } } });
    expect(await profile(server, 'shop')).toEqual({
      name: 'shop',
      description: 'Signed in as the test buyer.',
      status: 'pending',
      source: 'session',
      session_id: first.id,
      dedicated_sticky_ip: false,
      size_bytes: null,
      failure_reason: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    // Refusals: the name taken, a session unknown or of another project, a pending profile.
    expect(await makeProfile(server, 'shop', first.id)).toEqual({ status: 409, body: { error: { code: 409, message: 'A profile named shop already exists' } } });
    expect((await makeProfile(server, 'other', randomUUID())).body.error.message).toBe('Session not found');
    // A sticky IP needs the operator's service proxy pool, which this server has not.
    expect((await makeProfile(server, 'sticky', first.id, { dedicated_sticky_ip: true })).body.error.message).toMatch(/^dedicated_sticky_ip: this server has no service proxy pool/);
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    const asOther: Requester = { request: (p, init = {}) => server.request(p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': other.key } }) };
    expect((await makeProfile(asOther, 'theirs', first.id)).body.error.message).toBe('Session not found');
    expect((await call(asOther, 'GET', '/v1/profiles/shop')).status).toBe(404);
    expect((await call(asOther, 'DELETE', '/v1/profiles/shop')).status).toBe(404);
    const early = await postSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'shop' } } });
    expect(early.status).toBe(400);
    expect(early.body.error.message).toMatch(/Profile shop is pending/);
    expect((await postSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'nobody' } } })).body.error.message).toBe('Unknown profile: nobody');

    expect((await endSession(server, first.id)).status).toBe(200);
    // Ended through DELETE, a session is gone from the API.
    expect((await makeProfile(server, 'late', first.id)).body.error.message).toBe('Session not found');
    const ready = await settled(server, 'shop');
    expect(ready).toMatchObject({ status: 'ready', failure_reason: null });
    expect(ready.size_bytes).toBeGreaterThan(1000);
    // Nothing staged is left beside the roots once saved.
    expect(readdirSync(browsersDirFor(server.dataDir)).filter((n) => n.startsWith('.profile-save-'))).toEqual([]);

    const second = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'shop' } } });
    // Signed in, only the one tab (a profile restores state, not the tabs it was saved with),
    // and the viewport asked for (the default).
    expect(await stateOf(second.cdp_url)).toEqual({ ...SIGNED_IN, extra: null, tabs: 1, viewport: [1440, 900] });

    // The node unpacked that version once, for the sessions to copy.
    const cache = join(server.dataDir, 'profile-cache');
    expect(readdirSync(cache)).toHaveLength(1);

    // Deleted while a session uses it: the session keeps its copy; the node's unpacked one goes.
    expect(await call(server, 'DELETE', '/v1/profiles/shop')).toEqual({ status: 200, body: { data: { status: 'deleted' } } });
    await eventually(() => readdirSync(cache).length === 0, 5_000, 'the unpacked copy to go');
    expect((await call(server, 'GET', '/v1/profiles/shop')).status).toBe(404);
    expect(await stateOf(second.cdp_url)).toMatchObject(SIGNED_IN);
    await endSession(server, second.id);

  });

  it('persist writes the session\'s state back (the later end wins), and with a new name makes the profile', async () => {
    const maker = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'kept', persist: true } } });
    // Made at once, pending until the session ends.
    expect((await profile(server, 'kept')).status).toBe('pending');
    await signIn(maker.cdp_url, 'v1');
    await endSession(server, maker.id);
    expect(await settled(server, 'kept')).toMatchObject({ status: 'ready', session_id: maker.id });

    const withProfile = { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'kept', persist: true } } };
    const a = await createSession(server, withProfile);
    const b = await createSession(server, withProfile);
    for (const [s, v] of [[a, 'from-a'], [b, 'from-b']] as const) {
      const browser = await chromium.connectOverCDP(s.cdp_url);
      const page = browser.contexts()[0]!.pages()[0]!;
      await page.goto(pages.url('/account'));
      await page.evaluate((x) => localStorage.setItem('extra', x), v);
      await browser.close();
    }
    const before = (await profile(server, 'kept')).updated_at;
    await endSession(server, a.id);
    await eventually(async () => (await profile(server, 'kept')).updated_at !== before, 30_000, 'the first save');
    const afterA = (await profile(server, 'kept')).updated_at;
    await endSession(server, b.id);
    await eventually(async () => (await profile(server, 'kept')).updated_at !== afterA, 30_000, 'the second save');
    const c = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'kept' } } });
    expect(await stateOf(c.cdp_url)).toMatchObject({ ...SIGNED_IN, extra: 'from-b' });
    await endSession(server, c.id);
    // Each save replaced the stored object: one file is left for the profile.
    const kept = await server.db.query<{ id: string; project_id: string }>(`SELECT id, project_id FROM profiles WHERE name = 'kept'`);
    expect(readdirSync(join(server.dataDir, 'profiles', kept[0]!.project_id, kept[0]!.id))).toHaveLength(1);
  });

  it('a browser closed by its client saves the profile; a browser killed fails it with the reason', async () => {
    const closed = await createSession(server, HEADLESS);
    await signIn(closed.cdp_url);
    await makeProfile(server, 'closed-by-client', closed.id);
    const browser = await chromium.connectOverCDP(closed.cdp_url);
    await (await browser.newBrowserCDPSession()).send('Browser.close').catch(() => {});
    expect(await settled(server, 'closed-by-client')).toMatchObject({ status: 'ready' });
    expect(await makeProfile(server, 'too-late', closed.id)).toEqual({ status: 404, body: { error: { code: 404, message: 'Session is not running' } } });

    const crashed = await createSession(server, HEADLESS);
    await signIn(crashed.cdp_url);
    await makeProfile(server, 'crashed', crashed.id);
    process.kill(-rootOf(browsersDirFor(server.dataDir), crashed.id).owner.pids[0]!, 'SIGKILL');
    const failed = await settled(server, 'crashed');
    expect(failed).toMatchObject({ status: 'failed', size_bytes: null });
    expect(failed.failure_reason).toMatch(/browser was killed \(SIGKILL\)/);
    expect((await postSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'crashed' } } })).body.error.message).toMatch(/Profile crashed failed/);
  });

  it('lists a page at a time, newest first, with the count of all', async () => {
    const s = await createSession(server, HEADLESS);
    for (const name of ['page-a', 'page-b', 'page-c']) expect((await makeProfile(server, name, s.id)).status).toBe(200);
    const all = (await call(server, 'GET', '/v1/profiles')).body.data;
    const names = all.items.map((p: { name: string }) => p.name);
    expect(names.slice(0, 3)).toEqual(['page-c', 'page-b', 'page-a']);
    expect(all.count).toBe(all.items.length);
    const second = (await call(server, 'GET', '/v1/profiles?page=2&limit=2')).body.data;
    expect(second.count).toBe(all.count);
    expect(second.items.map((p: { name: string }) => p.name)).toEqual(names.slice(2, 4));
    expect((await call(server, 'GET', '/v1/profiles?limit=0')).status).toBe(400);
    // One session's end saves all three.
    await endSession(server, s.id);
    for (const name of ['page-a', 'page-b', 'page-c']) expect(await settled(server, name)).toMatchObject({ status: 'ready' });
    const rows = await server.db.query<{ storage_key: string }>(`SELECT storage_key FROM profiles WHERE name LIKE 'page-%'`);
    expect(new Set(rows.map((r) => r.storage_key)).size).toBe(3);
  });

  // A minute of waiting for the time-out (idle).
  it('a session that ends by idle time-out saves its profile', { timeout: 120_000 }, async () => {
    const saved = await eventually(async () => {
      const p = await profile(server, 'by-idle');
      return p.status !== 'pending' ? p : undefined;
    }, 90_000, 'the idle session to end and its profile to be saved');
    expect(saved).toMatchObject({ status: 'ready' });
    const s = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'by-idle' } } });
    expect(await stateOf(s.cdp_url)).toMatchObject(SIGNED_IN);
    await endSession(server, s.id);
    // Every session of this file has ended: no browser process, root or staged folder is left.
    const browsersDir = browsersDirFor(server.dataDir);
    await eventually(() => processesUnder(browsersDir).length === 0, 10_000, 'no browser process left');
    expect(readdirSync(browsersDir)).toEqual([]);
  });
});

describe('profiles across the server\'s stop', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-profiles-'));
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const start = async () => {
    const c = await startChildServer({ dataDir, apiKey });
    children.push(c);
    return c;
  };

  it('a graceful stop saves the profile of a running session; a kill -9 leaves it failed at the next start, with nothing staged left', { timeout: 120_000 }, async () => {
    const first = await start();
    const s = await createSession(first, HEADLESS);
    await signIn(s.cdp_url);
    expect((await makeProfile(first, 'at-shutdown', s.id)).status).toBe(200);
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    const second = await start();
    expect(await profile(second, 'at-shutdown')).toMatchObject({ status: 'ready' });
    const resumed = await createSession(second, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'at-shutdown' } } });
    expect(await stateOf(resumed.cdp_url)).toMatchObject(SIGNED_IN);
    expect((await makeProfile(second, 'at-kill', resumed.id)).status).toBe(200);
    second.child.kill('SIGKILL');
    await second.exited;

    const third = await start();
    const failed = await profile(third, 'at-kill');
    expect(failed).toMatchObject({ status: 'failed', failure_reason: 'The server stopped before the session\'s state was saved' });
    // The profile it was loaded from is untouched.
    expect(await profile(third, 'at-shutdown')).toMatchObject({ status: 'ready' });
    third.child.kill('SIGTERM');
    await third.exited;
    expect(existsSync(browsersDirFor(dataDir))).toBe(false);
  });
});
