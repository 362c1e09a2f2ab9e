// Ad-block (browser.adblock): AB1 a default session blocks ad and tracker requests,
// AB2 `adblock: {active: false}` loads them.
//
// The page is the ad-heavy news site of fixtures/ads.ts, driven by Playwright over cdp_url.
// Its hosts (news.example, securepubads.g.doubleclick.net, …) resolve nowhere: the session's
// proxy is the suite's fixture server, which answers for every host name as a proxy is asked
// (absolute-form requests) and keeps the list of what reached it. So the server under test
// must accept a proxy on the suite's address (a private one unless --fixtures-url says
// otherwise): a refusal skips the checks, saying so.
import { chromium } from 'playwright-core';
import { AD_PAGE, AD_REQUESTS, CONTENT_REQUESTS, adSite, type AdSite } from '../../fixtures/ads.js';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { check, defineRules, type T } from '../runner.js';

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

export default defineRules((ctx: SuiteContext) => {
  const createOp = ctx.contract.operation('createSession');
  const endOp = ctx.contract.operation('endSession');
  let site: AdSite | undefined;

  /**
   * Opens the ad page in a new session with these browser options, through the fixture
   * server as its proxy; answers what reached "the network" and what the page's worker got.
   */
  const visit = async (t: T, browser: object): Promise<{ requests: string[]; worker: unknown }> => {
    if (!site) {
      site = adSite();
      ctx.fixtures.proxied(site.handle);
    }
    const proxy = await ctx.fixtures.url('/');
    const body = {
      session: { recording: { active: false }, proxy: { active: true, type: 'custom', server: proxy.replace(/\/$/, '') } },
      browser: { headless: { active: true }, ...browser },
    };
    const ex = await ctx.call(await ctx.build(createOp), { bodyValue: body });
    const res = answer(t, ex);
    if (res.status === 400 && /proxy|private/i.test(res.text)) {
      t.skip(`the server refuses the suite's fixture server (${proxy}) as a session proxy: ${res.text.slice(0, 200)}`);
    }
    t.assert(res.status === 200, `POST /v1/sessions answered ${line(ex.request, res, 300)}`);
    const { id, cdp_url } = (res.json as { data: { id: string; cdp_url: string } }).data;
    try {
      const before = site.requests.length;
      const pw = await chromium.connectOverCDP(cdp_url, { timeout: 30_000 });
      try {
        const context = pw.contexts()[0] ?? (await pw.newContext());
        const page = context.pages()[0] ?? (await context.newPage());
        await page.goto(AD_PAGE, { timeout: 30_000 });
        const worker = await page.evaluate(() => (window as unknown as { __worker: Promise<unknown> }).__worker);
        // What the ad scripts load once they run (a frame, then its creative).
        await page.waitForLoadState('networkidle', { timeout: 10_000 }).catch(() => {});
        return { requests: site.requests.slice(before), worker };
      } finally {
        await pw.close().catch(() => {});
      }
    } finally {
      await ctx.call(await ctx.build(endOp, { pathParams: { session_id: id } }));
    }
  };

  const direct = AD_REQUESTS.filter((r) => r.kind !== 'loaded by an ad');

  return [
    check(
      'AB1 a default session blocks requests to ad and tracker hosts (EasyList, EasyPrivacy), in pages, frames and workers, and loads the rest',
      async (t: T) => {
        const { requests, worker } = await visit(t, {});
        const through = AD_REQUESTS.filter((r) => requests.includes(r.url));
        t.assert(
          through.length === 0,
          `ad and tracker requests reached the network with ad-block on by default: ${through.map((r) => `${r.url} (${r.kind}, ${r.list})`).join(', ')}`,
        );
        const missing = CONTENT_REQUESTS.filter((u) => !requests.includes(u));
        t.assert(missing.length === 0, `the page's own files did not load: ${missing.join(', ')}`);
        t.equal(worker, 'blocked', "the page's worker fetching a tracker pixel");
        t.note(`${requests.length} requests reached the network, none of the ${AD_REQUESTS.length} ad and tracker URLs`);
      },
    ),

    check('AB2 browser.adblock {active: false} lets the same ad and tracker requests through', async (t: T) => {
      const { requests, worker } = await visit(t, { adblock: { active: false } });
      const blocked = direct.filter((r) => !requests.includes(r.url));
      t.assert(blocked.length === 0, `with ad-block off these never reached the network: ${blocked.map((r) => `${r.url} (${r.kind})`).join(', ')}`);
      t.assert(typeof worker === 'string' && worker.startsWith('loaded'), `the page's worker did not load the tracker pixel: ${String(worker)}`);
      t.note(`${requests.length} requests reached the network, ${AD_REQUESTS.filter((r) => requests.includes(r.url)).length} of them ads and trackers`);
    }),
  ];
});
