// SP1, service proxies (openapi.yaml, ProxyServiceOptions): a session that asks for the
// service's proxy network either gets one, or is refused in words. It holds on any server:
//  - with no pool configured (the CI server), every service proxy answers 400 saying so;
//  - with a pool, an exit nobody offers (`zz`, a code no country has) answers 400 naming
//    what was asked, and a service proxy of any country starts a session whose traffic goes
//    through it: a page opened over cdp_url, the session ended by its CDP client, and the
//    record's proxy_bytes above 0.
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium } from 'playwright-core';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { check, defineRules, type T } from '../runner.js';

const HEADLESS = { headless: { active: true } };
/** Ended by the server if the check cannot end it. */
const TIMEOUT = { idle_timeout: 2, max_duration: 5 };
const NO_POOL = /not configured|SERVICE_PROXY_POOL/i;

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

/** The message of an error body {error: {code: 400, message}}; fails the check otherwise. */
function refusal(t: T, ex: Exchange): string {
  const res = answer(t, ex);
  t.assert(res.status === 400, `expected 400: ${show(ex)}`);
  const e = (res.json as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  t.assert(e && e.code === 400 && typeof e.message === 'string' && e.message.length > 0, `no error body {error: {code: 400, message}}: ${show(ex)}`);
  return e.message as string;
}

export default defineRules((ctx: SuiteContext) => {
  const createOp = ctx.contract.operation('createSession');
  const getOp = ctx.contract.operation('getSession');
  const endOp = ctx.contract.operation('endSession');
  const create = async (proxy: Record<string, unknown>) =>
    ctx.call(await ctx.build(createOp), { bodyValue: { browser: HEADLESS, session: { recording: { active: false }, timeout: TIMEOUT, proxy } } });
  const get = (id: string) => ctx.call(buildRequest(ctx.contract, getOp, { pathParams: { session_id: id } }));

  return [
    check("SP1 a service proxy is given from the operator's pool, or refused with 400 saying why (no pool, or none for what is asked)", async (t: T) => {
      const nowhere = refusal(t, await create({ active: true, type: 'service_proxy', country_code: 'zz' }));
      if (NO_POOL.test(nowhere)) {
        // No pool: refused whatever is asked, the vendor's form without type included.
        const any = refusal(t, await create({ active: true, country_code: 'us' }));
        t.assert(NO_POOL.test(any), `without a pool, the message does not say the operator has not configured one: ${JSON.stringify(any)}`);
        t.note(`this server has no service proxy pool: ${nowhere}`);
        return;
      }
      t.assert(/country_code=zz/.test(nowhere), `the 400 for an exit nobody offers does not name what was asked (country_code=zz): ${JSON.stringify(nowhere)}`);

      const ex = await create({ active: true, type: 'service_proxy' });
      const res = answer(t, ex);
      t.assert(res.status === 200, `a service proxy of any country, from a server with a pool: ${show(ex)}`);
      const s = (res.json as { data: { id: string; cdp_url: string } }).data;
      let ended = false;
      try {
        const browser = await chromium.connectOverCDP(s.cdp_url, { timeout: 30_000 });
        try {
          const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
          // Through the pool's proxy: whether the proxy reaches the suite's fixture server
          // depends on where it runs; what it was sent counts either way.
          const loaded = await page.goto(await ctx.fixtures.url('/site/script-rendered.html'), { timeout: 20_000 }).then(
            (r) => `HTTP ${r?.status()}`,
            (err: Error) => err.message.split('\n')[0],
          );
          t.note(`the fixture page through the service proxy: ${loaded}`);
          // Ended by its CDP client (Browser.close): the session stays readable, with its figures.
          const cdp = await browser.newBrowserCDPSession();
          await cdp.send('Browser.close').catch(() => {});
        } finally {
          await browser.close().catch(() => {});
        }
        let record: { status?: string; proxy_bytes?: number } | undefined;
        for (let i = 0; i < 60; i++) {
          const got = await get(s.id);
          record = (answer(t, got).json as { data?: typeof record } | undefined)?.data;
          if (record?.status === 'completed' || record?.status === 'failed') break;
          await sleep(500);
        }
        t.assert(record?.status === 'completed', `the session did not end after Browser.close: ${JSON.stringify(record)}`);
        ended = true;
        t.assert(
          typeof record.proxy_bytes === 'number' && record.proxy_bytes > 0,
          `proxy_bytes is ${JSON.stringify(record.proxy_bytes)}: no traffic went through the service proxy`,
        );
        t.note(`session ${s.id}: proxy_bytes ${record.proxy_bytes}`);
      } finally {
        if (!ended) await ctx.call(buildRequest(ctx.contract, endOp, { pathParams: { session_id: s.id } }));
      }
    }),
  ];
});
