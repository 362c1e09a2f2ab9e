// The captcha solver in sessions (browser.captcha_solver): CS1 a session with the
// option passes a challenge page by itself; the client's script only navigates and waits for
// the page behind it.
//
// The challenge is the fixture site's proof of work (fixtures/server.ts, an ALTCHA widget),
// the kind any server can pass: reCAPTCHA and its like need a paid captcha-solving service,
// which a server under test may not have. The contract wants an active proxy with the
// solver: the session's proxy is the suite's fixture server itself, which answers the
// absolute-form requests a browser sends its proxy for the fixture site's own address. So the
// server under test must accept a proxy on the suite's address (a private one unless
// --fixtures-url says otherwise): a refusal skips the check, saying so.
import { chromium } from 'playwright-core';
import { fixtureRoutes, handleFixtureRequest } from '../../fixtures/server.js';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { check, defineRules, type T } from '../runner.js';

/** Ended by the server if the check cannot end it. */
const TIMEOUT = { idle_timeout: 2, max_duration: 5 };
/** How long the page behind the challenge may take to arrive. */
const PASS_MS = 60_000;

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

export default defineRules((ctx: SuiteContext) => {
  const createOp = ctx.contract.operation('createSession');
  const endOp = ctx.contract.operation('endSession');
  let mounted = false;
  const fixture = async (path: string): Promise<string> => {
    if (!mounted) {
      mounted = true;
      for (const r of fixtureRoutes()) {
        ctx.fixtures.route(r.method, r.path, async (req, res, body) => {
          if (!(await handleFixtureRequest(req, res, body))) res.writeHead(404).end();
        });
      }
    }
    return ctx.fixtures.url(path);
  };

  return [
    check(
      'CS1 a session with browser.captcha_solver passes a proof-of-work challenge page by itself: the script only navigates and waits for the page behind it',
      async (t: T) => {
        const challenge = await fixture('/challenge/pow');
        const proxy = new URL(challenge).origin;
        const body = {
          session: { recording: { active: false }, timeout: TIMEOUT, proxy: { active: true, type: 'custom', server: proxy } },
          browser: { headless: { active: true }, captcha_solver: { active: true } },
        };
        const ex = await ctx.call(await ctx.build(createOp), { bodyValue: body });
        const res = answer(t, ex);
        if (res.status === 400 && /proxy|private/i.test(res.text)) {
          t.skip(`the server refuses the suite's fixture server (${proxy}) as a session proxy: ${res.text.slice(0, 200)}`);
        }
        t.assert(res.status === 200, `POST /v1/sessions answered ${line(ex.request, res, 300)}`);
        const { id, cdp_url } = (res.json as { data: { id: string; cdp_url: string } }).data;
        try {
          const browser = await chromium.connectOverCDP(cdp_url, { timeout: 30_000 });
          try {
            const context = browser.contexts()[0] ?? (await browser.newContext());
            const page = context.pages()[0] ?? (await context.newPage());
            const started = Date.now();
            const loaded = await page.goto(challenge, { timeout: 30_000 }).then(
              () => 'loaded',
              (err: Error) => err.message.split('\n')[0],
            );
            t.assert(loaded === 'loaded', `the challenge page did not load through the session: ${loaded}`);
            const behind = await page.waitForSelector('#protected', { timeout: PASS_MS }).then(
              (el) => el.textContent(),
              () => undefined,
            );
            t.assert(
              behind !== undefined,
              `the page behind the challenge did not arrive within ${PASS_MS / 1000} s; the page shows ${JSON.stringify((await page.textContent('body').catch(() => ''))?.trim().slice(0, 200))}`,
            );
            t.equal(behind, 'Proof of work accepted.', 'the page behind the challenge');
            t.note(`passed in ${Date.now() - started} ms from the goto`);
          } finally {
            await browser.close().catch(() => {});
          }
        } finally {
          await ctx.call(await ctx.build(endOp, { pathParams: { session_id: id } }));
        }
      },
    ),
  ];
});
