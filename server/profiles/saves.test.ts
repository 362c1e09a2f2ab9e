// When a session's profile is saved, and when it fails, over real HTTP and real Chromium:
// persist (into the same profile, the later end winning, and under a new name), a browser
// closed by its client (saved) and a browser killed (failed with the reason). Beside
// profiles.test.ts (making, using and listing profiles).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { HEADLESS, browsersDirFor, createSession, endSession, eventually, postSession, processesUnder, rootOf } from '../sessions/test-support.js';
import { SIGNED_IN, makeProfile, profile, settled, signIn, startPageServer, stateOf, type PageServer } from './test-support.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => {
  await pages?.close();
});

describe.each(browserBackends)('profiles on %s', (backend) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ backend });
  });
  afterAll(async () => {
    await server?.close();
  });

  it("persist writes the session's state back (the later end wins), and with a new name makes the profile", async () => {
    const maker = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'kept', persist: true } } });
    // Made at once, pending until the session ends.
    expect((await profile(server, 'kept')).status).toBe('pending');
    await signIn(pages, maker.cdp_url, 'v1');
    await endSession(server, maker.id);
    expect(await settled(server, 'kept')).toMatchObject({ status: 'ready', session_id: maker.id });

    const withProfile = { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'kept', persist: true } } };
    const a = await createSession(server, withProfile);
    const b = await createSession(server, withProfile);
    for (const [s, v] of [
      [a, 'from-a'],
      [b, 'from-b'],
    ] as const) {
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
    expect(await stateOf(pages, c.cdp_url)).toMatchObject({ ...SIGNED_IN, extra: 'from-b' });
    await endSession(server, c.id);
    // Each save replaced the stored object: one file is left for the profile.
    const kept = await server.db.query<{ id: string; project_id: string }>(`SELECT id, project_id FROM profiles WHERE name = 'kept'`);
    expect(readdirSync(join(server.dataDir, 'profiles', kept[0]!.project_id, kept[0]!.id))).toHaveLength(1);
  });

  it('a browser closed by its client saves the profile; a browser killed fails it with the reason', async () => {
    const closed = await createSession(server, HEADLESS);
    await signIn(pages, closed.cdp_url);
    await makeProfile(server, 'closed-by-client', closed.id);
    const browser = await chromium.connectOverCDP(closed.cdp_url);
    await (await browser.newBrowserCDPSession()).send('Browser.close').catch(() => {});
    expect(await settled(server, 'closed-by-client')).toMatchObject({ status: 'ready' });
    expect(await makeProfile(server, 'too-late', closed.id)).toEqual({ status: 404, body: { error: { code: 404, message: 'Session is not running' } } });

    const crashed = await createSession(server, HEADLESS);
    await signIn(pages, crashed.cdp_url);
    await makeProfile(server, 'crashed', crashed.id);
    process.kill(-rootOf(browsersDirFor(server.dataDir), crashed.id).owner.pids[0]!, 'SIGKILL');
    const failed = await settled(server, 'crashed');
    expect(failed).toMatchObject({ status: 'failed', size_bytes: null });
    expect(failed.failure_reason).toMatch(/browser was killed \(SIGKILL\)/);
    expect((await postSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'crashed' } } })).body.error.message).toMatch(
      /Profile crashed failed/,
    );
    // Every session of this file has ended: no browser process, root or staged folder is left.
    const browsersDir = browsersDirFor(server.dataDir);
    await eventually(() => processesUnder(browsersDir).length === 0, 10_000, 'no browser process left');
    expect(readdirSync(browsersDir)).toEqual([]);
  });
});
