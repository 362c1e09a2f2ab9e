// browser.adblock end to end: the ad-heavy page of fixtures/ads.ts opened by Playwright over
// cdp_url in real Chromium, its ad and tracker hosts answered locally through the session's
// traffic proxy (the session's proxy is the fixture site, which answers for every host name
// and lists what reached it). On by default: nothing of EasyList's or EasyPrivacy's reaches
// the network, from the page, its frames, its worker, a tab or a context the client opens,
// warm or cold; off: all of it loads, a warm browser's rules turned off when it is taken.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AD_PAGE, AD_REQUESTS, CONTENT_REQUESTS, PLAIN_PAGE, PLAIN_REQUESTS, startAdSite, type AdSiteServer } from '../../fixtures/ads.js';
import { ADBLOCK, rootPaths } from '../browser/index.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, createSession, endSession, eventually, getSession, rootOf } from './test-support.js';

const ADS = AD_REQUESTS.map((r) => r.url);

/** The ad-block's entry in a browser's profile preferences, if it has one. */
function adblockOf(rootDir: string): { path: string } | undefined {
  const prefs = JSON.parse(readFileSync(join(rootPaths(rootDir).userData, 'Default', 'Preferences'), 'utf8'));
  return prefs.extensions?.settings?.[ADBLOCK.id];
}
/** The ad requests the page makes itself (the rest come from ad scripts that ran). */
const DIRECT = AD_REQUESTS.filter((r) => r.kind !== 'loaded by an ad').map((r) => r.url);

/** Opens `url` in a page of the context and answers what reached the network meanwhile, and the worker's result. */
async function visit(site: AdSiteServer, context: BrowserContext, url = AD_PAGE): Promise<{ requests: string[]; worker: unknown; ran: string[] }> {
  const before = site.requests.length;
  const page = await context.newPage();
  try {
    await page.goto(url);
    const worker = await page.evaluate(() => (window as unknown as { __worker: Promise<unknown> }).__worker);
    await page.waitForLoadState('networkidle');
    const ran = await page.evaluate(() => (window as unknown as { __loaded?: string[] }).__loaded ?? []);
    return { requests: site.requests.slice(before), worker, ran };
  } finally {
    await page.close();
  }
}

const through = (requests: string[]) => ADS.filter((u) => requests.includes(u));

describe('ad-block', () => {
  let server: TestServer;
  let site: AdSiteServer;

  beforeAll(async () => {
    site = await startAdSite();
    server = await startTestServer({ env: { BROWSER_POOL_SIZE: '1' } });
  });
  afterAll(async () => {
    await server?.close();
    await site?.close();
  });

  const warm = async () => (await (await fetch(`${server.url}/healthz`)).json()).browsers.warm as number;
  const proxied = (browser: object = {}, session: object = {}) => ({
    session: { recording: { active: false }, proxy: { active: true, type: 'custom', server: site.proxyUrl }, ...session },
    browser,
  });
  const withSession = async <T>(body: object, fn: (browser: Browser, id: string) => Promise<T>): Promise<T> => {
    const s = await createSession(server, body);
    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      return await fn(browser, s.id);
    } finally {
      await browser.close();
      await endSession(server, s.id);
    }
  };

  it('is on by default in a warm session: no ad or tracker request reaches the network, from the page, its frames, its worker, a new tab or a new context', async () => {
    await eventually(async () => (await warm()) === 1, 60_000, 'a warm browser');
    await withSession(proxied(), async (browser, id) => {
      const root = rootOf(browsersDirFor(server.config.dataDir), id);
      expect(root.dir).toMatch(/\/pool-[0-9a-f]+$/); // the warm browser
      // Installed by its profile from the copy indexed once, outside every root: not loaded
      // (and indexed) from a folder of its own at its start.
      const installed = adblockOf(root.dir);
      expect(installed?.path).toEqual(expect.any(String));
      expect(installed!.path.startsWith(root.dir)).toBe(false);
      expect(existsSync(join(installed!.path, '_metadata', 'generated_indexed_rulesets'))).toBe(true);
      expect(existsSync(join(root.dir, 'adblock'))).toBe(false);
      // (Debian's launcher script adds an empty --load-extension= of its own.)
      expect(readFileSync(`/proc/${root.owner.pids[0]}/cmdline`, 'latin1')).not.toMatch(/--load-extension=[^\0]/);

      // A tab the client opens in the default context.
      const tab = await visit(site, browser.contexts()[0]!);
      expect(through(tab.requests)).toEqual([]);
      expect(tab.requests).toEqual(expect.arrayContaining([...CONTENT_REQUESTS]));
      expect(tab.worker).toBe('blocked');
      expect(tab.ran.sort()).toEqual(['/static/app.js', '/static/vendor.js']); // the page's own, no ad script

      // A context of its own (off the record), as Playwright's newContext makes.
      const context = await browser.newContext();
      const fresh = await visit(site, context);
      await context.close();
      expect(through(fresh.requests)).toEqual([]);
      expect(fresh.requests).toEqual(expect.arrayContaining([...CONTENT_REQUESTS]));
      expect(fresh.worker).toBe('blocked');
    });
  });

  it('turned off, a warm session loads every ad and tracker: the rules are turned off when the session takes the browser', async () => {
    await eventually(async () => (await warm()) === 1, 60_000, 'a warm browser');
    await withSession(proxied({ adblock: { active: false } }), async (browser, id) => {
      expect(rootOf(browsersDirFor(server.config.dataDir), id).dir).toMatch(/\/pool-[0-9a-f]+$/);
      const tab = await visit(site, browser.contexts()[0]!);
      expect(tab.requests).toEqual(expect.arrayContaining([...DIRECT, ...CONTENT_REQUESTS]));
      expect(tab.worker).toMatch(/^loaded \d+$/);
      expect(tab.ran).toEqual(expect.arrayContaining(['/static/app.js', 'gpt', 'adsbygoogle', 'apstag', 'taboola', 'scorecard', 'hotjar', 'footer ad']));
      // The ads the ad scripts load once they run.
      expect(tab.requests).toEqual(expect.arrayContaining(ADS));

      const context = await browser.newContext();
      const fresh = await visit(site, context);
      await context.close();
      expect(fresh.requests).toEqual(expect.arrayContaining(DIRECT));
      // The page the extension's rules were turned off in is gone before the session is handed out.
      expect(
        browser
          .contexts()[0]!
          .pages()
          .map((p) => p.url()),
      ).toEqual(['about:blank']);
    });
  });

  it('cold sessions: on, the first navigation (initial_url) is already filtered; off, the browser does not carry the extension', async () => {
    const headless = { headless: { active: true } };
    const before = site.requests.length;
    await withSession(proxied(headless, { initial_url: AD_PAGE }), async (browser, id) => {
      const root = rootOf(browsersDirFor(server.config.dataDir), id);
      expect(root.dir).toMatch(/\/s-[0-9a-f]+$/);
      await eventually(() => site.requests.slice(before).includes('http://news.example/static/worker.js'), 10_000, 'the initial page');
      const page = browser.contexts()[0]!.pages()[0]!;
      expect(await page.evaluate(() => (window as unknown as { __worker: Promise<unknown> }).__worker)).toBe('blocked');
      expect(through(site.requests.slice(before))).toEqual([]);
    });

    await withSession(proxied({ ...headless, adblock: { active: false } }), async (browser, id) => {
      const root = rootOf(browsersDirFor(server.config.dataDir), id);
      expect(existsSync(join(root.dir, 'adblock'))).toBe(false);
      expect(adblockOf(root.dir)).toBeUndefined();
      const tab = await visit(site, browser.contexts()[0]!);
      expect(tab.requests).toEqual(expect.arrayContaining(DIRECT));
    });
  });

  it('leaves a page without ads as it is, and the option is stored as given', async () => {
    const s = await createSession(server, proxied({ headless: { active: true }, adblock: { active: true } }));
    try {
      const browser = await chromium.connectOverCDP(s.cdp_url);
      const plain = await visit(site, browser.contexts()[0]!, PLAIN_PAGE);
      await browser.close();
      expect(plain.requests.sort()).toEqual([...PLAIN_REQUESTS].sort());
      expect(plain.worker).toMatch(/^loaded \d+$/);
      expect((await getSession(server, s.id)).body.data.configuration.browser).toEqual({ headless: { active: true }, adblock: { active: true } });
    } finally {
      await endSession(server, s.id);
    }
  });
});
