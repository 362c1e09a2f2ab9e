// The browser a session gets: headful on its own Xvfb (the default) or headless, the
// viewport, fullscreen, the popup blocker, web security, initial_url; and the warm pool
// that serves default sessions.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { environOf, xSocket } from '../browser/test-support.js';
import { isRunning } from '../browser/procfs.js';
import {
  HEADLESS,
  browsersDirFor,
  headless,
  createSession,
  endSession,
  eventually,
  getSession,
  gone,
  postSession,
  processesUnder,
  roots,
  rootOf,
  startPageServer,
  type PageServer,
} from './test-support.js';

/** Opens `path` in the session's first page and reads what the page script left in window[key]. */
async function pageResult(cdpUrl: string, url: string, key: string): Promise<unknown> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(url);
    await page.waitForFunction((k) => (window as unknown as Record<string, unknown>)[k] !== undefined, key, { timeout: 10_000 });
    return await page.evaluate((k) => (window as unknown as Record<string, unknown>)[k], key);
  } finally {
    await browser.close();
  }
}

describe('session browsers', () => {
  let server: TestServer;
  let pages: PageServer;
  let browsersDir: string;

  beforeAll(async () => {
    server = await startTestServer();
    pages = await startPageServer();
    browsersDir = browsersDirFor(server.config.dataDir);
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  it('runs headful sessions (the default) each on its own Xvfb, headless ones without one; all of it ends with the session', async () => {
    const [a, b, c] = await Promise.all([createSession(server, {}), createSession(server, {}), createSession(server, HEADLESS)]);
    const [ra, rb, rc] = [a, b, c].map((s) => rootOf(browsersDir, s.id));
    // The pool is off (BROWSER_POOL_SIZE=0): every browser launched for its session.
    for (const r of [ra, rb, rc]) expect(basename(r!.dir)).toMatch(/^s-/);
    for (const r of [ra!, rb!]) {
      expect(r.owner.display).toMatch(/^:\d+$/);
      const [chromiumPid, xvfbPid] = r.owner.pids;
      expect(isRunning(xvfbPid!)).toBe(true);
      expect(environOf(chromiumPid!, 'DISPLAY')).toBe(r.owner.display);
      expect(xSocket(r.owner.display!)).not.toBeNull();
    }
    const sockets = [ra!, rb!].map((r) => xSocket(r.owner.display!));
    expect(ra!.owner.display).not.toBe(rb!.owner.display);
    expect(rc!.owner.display).toBeUndefined();
    expect(rc!.owner.pids).toHaveLength(1);
    expect(environOf(rc!.owner.pids[0]!, 'DISPLAY')).toBeUndefined();

    // The default viewport on a real window.
    const size = (await pageResult(a.cdp_url, pages.url('/size'), 'size')) as Record<string, number>;
    expect([size.w, size.h]).toEqual([1440, 900]);
    // A window with its toolbar around the page (read again until the window is mapped).
    await expect
      .poll(async () => ((await pageResult(a.cdp_url, pages.url('/size'), 'size')) as Record<string, number>).oh, { timeout: 15_000 })
      .toBeGreaterThan(size.h);

    await Promise.all([a, b, c].map((s) => endSession(server, s.id)));
    for (const r of [ra!, rb!, rc!]) expect(gone(r)).toEqual({ processes: [], directory: false });
    // Their sockets are gone (one on the same number now is another Xvfb's).
    [ra!, rb!].forEach((r, i) => expect(xSocket(r.owner.display!)).not.toEqual(sockets[i]));
  });

  it('applies viewport, fullscreen, popup_blocker and disable_web_security', async () => {
    const noRecording = { recording: { active: false } };
    const plain = await createSession(server, { browser: { headless: { active: true }, viewport: { width: 800, height: 600 } }, session: noRecording });
    const custom = await createSession(server, {
      browser: {
        headless: { active: true },
        viewport: { width: 1000, height: 700 },
        fullscreen: { active: true },
        popup_blocker: { active: false },
        disable_web_security: { active: true },
      },
      session: noRecording,
    });
    try {
      const plainSize = (await pageResult(plain.cdp_url, pages.url('/size'), 'size')) as Record<string, number>;
      expect([plainSize.w, plainSize.h]).toEqual([800, 600]);
      expect(plainSize.sh).toBeGreaterThan(600); // a window with a toolbar on a screen around it
      const fullSize = (await pageResult(custom.cdp_url, pages.url('/size'), 'size')) as Record<string, number>;
      expect(fullSize).toMatchObject({ w: 1000, h: 700, sw: 1000, sh: 700 }); // the page is the screen

      // Popups without a user gesture: blocked by default, opened with the blocker off.
      expect(await pageResult(plain.cdp_url, pages.url('/popup'), 'popupResult')).toBe('blocked');
      expect(await pageResult(custom.cdp_url, pages.url('/popup'), 'popupResult')).toBe('opened');

      // A cross-origin read without CORS headers: refused unless web security is off.
      expect(await pageResult(plain.cdp_url, pages.url('/cors'), 'corsResult')).toBe('blocked');
      expect(await pageResult(custom.cdp_url, pages.url('/cors'), 'corsResult')).toBe('read:secret-data');
    } finally {
      await endSession(server, plain.id);
      await endSession(server, custom.id);
    }
  });

  it("applies the vendor's options: pdf_viewer, disable_dialogs, force_popups_as_tabs; refuses those this server cannot honour, naming them", async () => {
    const plain = await createSession(server, {
      browser: { headless: { active: true }, popup_blocker: { active: false } },
      session: { recording: { active: false } },
    });
    const custom = await createSession(server, {
      browser: {
        headless: { active: true },
        popup_blocker: { active: false },
        pdf_viewer: { active: false },
        disable_dialogs: { active: true },
        force_popups_as_tabs: { active: true },
        // Turned off, the options this server cannot honour are accepted.
        tracing: { active: false },
        p2p_download: { active: false },
      },
      session: { recording: { active: false } },
    });
    const plainBrowser = await chromium.connectOverCDP(plain.cdp_url);
    const customBrowser = await chromium.connectOverCDP(custom.cdp_url);
    try {
      const [plainPage, customPage] = [plainBrowser, customBrowser].map((b) => b.contexts()[0]!.pages()[0]!);

      // Dialogs: a person would be asked without the option; with it none opens, and each
      // answers as a dismissed dialog does.
      const asked: string[] = [];
      plainPage.on('dialog', (d) => void (asked.push(d.type()), d.dismiss()));
      customPage.on('dialog', (d) => void (asked.push(`custom ${d.type()}`), d.dismiss()));
      await plainPage.goto(pages.url('/dialogs'));
      expect(asked).toEqual(['alert', 'confirm', 'prompt']);
      await customPage.goto(pages.url('/dialogs'));
      expect(await customPage.evaluate(() => (window as unknown as { dialogResults: unknown }).dialogResults)).toEqual(['alerted', false, null]);
      expect(asked).toEqual(['alert', 'confirm', 'prompt']);
      // In a browser context the client makes too (off the record, where only extensions
      // the profile allows run).
      const ownContext = await customBrowser.newContext();
      const inContext = await ownContext.newPage();
      inContext.on('dialog', (d) => void (asked.push(`context ${d.type()}`), d.dismiss()));
      await inContext.goto(pages.url('/dialogs'));
      expect(await inContext.evaluate(() => (window as unknown as { dialogResults: unknown }).dialogResults)).toEqual(['alerted', false, null]);
      expect(asked).toEqual(['alert', 'confirm', 'prompt']);

      // window.open with window features: a window of its own, or a tab of the opener's.
      const windowOf = async (page: typeof plainPage) => {
        const cdp = await page.context().newCDPSession(page);
        const { targetInfo } = await cdp.send('Target.getTargetInfo');
        return (await cdp.send('Browser.getWindowForTarget', { targetId: targetInfo.targetId })).windowId;
      };
      for (const [page, separate] of [
        [plainPage, true],
        [customPage, false],
      ] as const) {
        const [popup] = await Promise.all([page.context().waitForEvent('page'), page.goto(pages.url('/popup-window'))]);
        await popup.waitForLoadState();
        expect(await popup.title()).toBe('Second');
        expect((await windowOf(popup)) !== (await windowOf(page)), `a separate window: ${separate}`).toBe(separate);
        await popup.close();
      }
      const [contextPopup] = await Promise.all([ownContext.waitForEvent('page'), inContext.goto(pages.url('/popup-window'))]);
      await contextPopup.waitForLoadState();
      expect(await windowOf(contextPopup)).toBe(await windowOf(inContext));
      await ownContext.close();

      // A PDF: shown in the viewer, or downloaded into the session's downloads.
      await plainPage.goto(pages.url('/doc.pdf'));
      expect(plainPage.url()).toBe(pages.url('/doc.pdf'));
      // (Playwright, connected, takes the session's downloads into its own folder.)
      const [download] = await Promise.all([customPage.waitForEvent('download'), customPage.goto(pages.url('/doc.pdf')).catch(() => {})]);
      expect(download.suggestedFilename()).toBe('doc.pdf');
    } finally {
      await plainBrowser.close().catch(() => {});
      await customBrowser.close().catch(() => {});
      await endSession(server, plain.id);
      await endSession(server, custom.id);
    }

    const refused = async (body: unknown, message: RegExp) => {
      const res = await postSession(server, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.message).toMatch(message);
    };
    for (const option of ['p2p_download', 'tracing', 'sensitive_data_mask', 'web_bot_auth']) {
      await refused({ browser: { [option]: { active: true } } }, new RegExp(`^browser\\.${option}: .*not available on this server`));
    }
    // The vendor's proxy example: type left out means the service's proxy network (this
    // server has no pool: service-proxy.test.ts gives it one).
    await refused({ session: { proxy: { active: true, country_code: 'gb' } } }, /has not configured a proxy pool \(SERVICE_PROXY_POOL\)/);
    await refused({ session: { proxy: { active: true, country_code: 'us', city: 'boston' } } }, /region/);
    await refused({ identity_skip_validation: false, skip_profile_validation: true }, /same option/);
    expect(roots(browsersDir)).toEqual([]);
  });

  it('opens initial_url before answering, and still starts a session whose initial_url does not load', async () => {
    const good = await createSession(server, headless({ initial_url: pages.url('/second') }));
    const bad = await createSession(server, headless({ initial_url: 'http://127.0.0.1:9/' }));
    try {
      expect(pages.requests).toContain('GET /second');
      const list = (await (await server.request(`/v1/sessions/${good.id}/pages`)).json()).data;
      expect(list).toEqual([expect.objectContaining({ url: pages.url('/second'), title: 'Second' })]);
      expect((await getSession(server, bad.id)).body.data.status).toBe('running');
    } finally {
      await endSession(server, good.id);
      await endSession(server, bad.id);
    }
  });
});

describe('warm pool', () => {
  it('serves default sessions from pre-launched browsers, refills in the background, launches other configurations cold, and closes with the server', async () => {
    const server = await startTestServer({ env: { BROWSER_POOL_SIZE: '1' } });
    const browsersDir = browsersDirFor(server.config.dataDir);
    try {
      const warm = async () => (await (await fetch(`${server.url}/healthz`)).json()).browsers.warm as number;
      await eventually(async () => (await warm()) === 1, 30_000, 'a warm browser');
      const [pooled] = roots(browsersDir).filter((r) => r.owner.sessionId === null);
      expect(basename(pooled!.dir)).toMatch(/^pool-/);
      expect(pooled!.owner.display).toMatch(/^:\d+$/); // the default is headful

      const started = Date.now();
      const fromPool = await createSession(server, {});
      const warmMs = Date.now() - started;
      // The session took the warm browser: same root, now owned by the session.
      const root = rootOf(browsersDir, fromPool.id);
      expect(root.dir).toBe(pooled!.dir);
      expect(root.owner.pids).toEqual(pooled!.owner.pids);
      const browser = await chromium.connectOverCDP(fromPool.cdp_url);
      expect(
        await browser
          .contexts()[0]!
          .pages()[0]!
          .evaluate(() => [innerWidth, innerHeight]),
      ).toEqual([1440, 900]);
      await browser.close();

      // Refilled in the background with a new browser.
      await eventually(async () => (await warm()) === 1, 30_000, 'the pool to refill');
      const refill = roots(browsersDir).filter((r) => r.owner.sessionId === null);
      expect(refill).toHaveLength(1);
      expect(refill[0]!.dir).not.toBe(pooled!.dir);

      // Another configuration launches cold, leaving the warm browser in the pool.
      const t = Date.now();
      const cold = await createSession(server, HEADLESS);
      const coldMs = Date.now() - t;
      expect(basename(rootOf(browsersDir, cold.id).dir)).toMatch(/^s-/);
      expect(await warm()).toBe(1);
      expect(warmMs).toBeLessThan(coldMs);

      await endSession(server, fromPool.id);
      await endSession(server, cold.id);
      expect(gone(root)).toEqual({ processes: [], directory: false });
    } finally {
      await server.close();
    }
    // The warm browser went with the server.
    expect(processesUnder(browsersDir)).toEqual([]);
    expect(existsSync(browsersDir)).toBe(false); // roots and the directory itself
  });
});
