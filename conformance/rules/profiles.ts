// P1, P2 (docs/conformance-rules.md, Profiles and extensions) and G9 for profiles. P2 signs
// in to the suite's own fixture pages through Playwright over cdp_url: a session cookie, a
// persistent cookie and local storage, which a new session with the profile must have.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium } from 'playwright-core';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { check, defineRules, type T } from '../runner.js';

/** Cheap sessions: no window, no recording, and ended by the server if a check cannot end them. */
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false }, timeout: { idle_timeout: 2, max_duration: 5 } } };
/** How long a profile may stay pending after its session ended. */
const SAVE_WAIT_MS = 60_000;

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

const LOGIN = `<!doctype html><title>P2 login</title><script>
  localStorage.setItem('p2-user', 'conformance');
  window.signedIn = true;
</script>`;
const CHECK = `<!doctype html><title>P2 check</title><script>
  window.state = { cookies: document.cookie, user: localStorage.getItem('p2-user') };
</script>`;

export default defineRules((ctx: SuiteContext) => {
  const createSessionOp = ctx.contract.operation('createSession');
  const endSessionOp = ctx.contract.operation('endSession');
  const createOp = ctx.contract.operation('createProfile');
  const getOp = ctx.contract.operation('getProfile');
  const deleteOp = ctx.contract.operation('deleteProfile');

  const newSession = async (t: T, body: unknown = HEADLESS): Promise<{ id: string; cdp_url: string }> => {
    const ex = await ctx.call(await ctx.build(createSessionOp), { bodyValue: body });
    const res = answer(t, ex);
    t.assert(res.status === 200, `POST /v1/sessions answered ${show(ex)}`);
    return (res.json as { data: { id: string; cdp_url: string } }).data;
  };
  const endSession = (id: string) => ctx.call(buildRequest(ctx.contract, endSessionOp, { pathParams: { session_id: id } }));
  const createProfile = async (name: string, sessionId: string) =>
    ctx.call(await ctx.build(createOp), { bodyValue: { name, source: 'session', session_id: sessionId } });
  const getProfile = (name: string) => ctx.call(buildRequest(ctx.contract, getOp, { pathParams: { name } }));
  const deleteProfile = (name: string) => ctx.call(buildRequest(ctx.contract, deleteOp, { pathParams: { name } }));
  const uniqueName = (rule: string) => `conformance-${rule}-${randomBytes(4).toString('hex')}`;

  /** Skips the check when the server does not implement profiles. */
  const implemented = (t: T, ex: Exchange) => {
    if (answer(t, ex).status === 501) t.skip('profiles are not implemented by this server (501)');
  };

  return [
    check('P1 a profile can be created only from a running session: an unknown and an ended session answer 4xx, a running one 200', async (t: T) => {
      const unknown = await createProfile(uniqueName('p1'), '00000000-0000-4000-8000-000000000000');
      implemented(t, unknown);
      t.assert(answer(t, unknown).status >= 400 && unknown.response!.status < 500, `from an unknown session: ${show(unknown)}`);

      const ended = await newSession(t);
      const end = await endSession(ended.id);
      t.assert(answer(t, end).status === 200, `DELETE /v1/sessions/${ended.id}: ${show(end)}`);
      const fromEnded = await createProfile(uniqueName('p1'), ended.id);
      t.assert(answer(t, fromEnded).status >= 400 && fromEnded.response!.status < 500, `from an ended session: ${show(fromEnded)}`);

      const running = await newSession(t);
      const name = uniqueName('p1');
      try {
        const made = await createProfile(name, running.id);
        t.assert(answer(t, made).status === 200, `from a running session: ${show(made)}`);
        t.note(show(made));
      } finally {
        await deleteProfile(name);
        await endSession(running.id);
      }
    }),

    check('G9 profiles: create → get → delete → get answers 404', async (t: T) => {
      const s = await newSession(t);
      const name = uniqueName('g9');
      try {
        const made = await createProfile(name, s.id);
        implemented(t, made);
        t.assert(answer(t, made).status === 200, show(made));
        const got = await getProfile(name);
        t.assert(answer(t, got).status === 200, `GET after create: ${show(got)}`);
        const gone = await deleteProfile(name);
        t.assert(answer(t, gone).status === 200, `DELETE: ${show(gone)}`);
        const after = await getProfile(name);
        t.assert(answer(t, after).status === 404, `GET after DELETE: ${show(after)}`);
      } finally {
        await endSession(s.id);
      }
    }),

    check('P2 a profile is stored once its session ends, and a new session with it has the cookies and local storage of the first', async (t: T) => {
      const base = await ctx.fixtures.url('/');
      ctx.fixtures.route('GET', '/p2/login', (_req, res) => {
        res.writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'set-cookie': ['p2_session=kept-without-expiry; Path=/', 'p2_persistent=kept-with-expiry; Path=/; Max-Age=86400'],
        });
        res.end(LOGIN);
      });
      ctx.fixtures.route('GET', '/p2/check', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(CHECK);
      });
      const name = uniqueName('p2');
      const first = await newSession(t);
      let second: { id: string; cdp_url: string } | undefined;
      try {
        const browser = await chromium.connectOverCDP(first.cdp_url, { timeout: 30_000 });
        try {
          const page = browser.contexts()[0]?.pages()[0] ?? (await browser.contexts()[0]!.newPage());
          await page.goto(new URL('/p2/login', base).toString());
          await page.waitForFunction(() => (window as { signedIn?: boolean }).signedIn === true, undefined, { timeout: 15_000 });
        } finally {
          await browser.close();
        }
        const made = await createProfile(name, first.id);
        implemented(t, made);
        t.assert(answer(t, made).status === 200, show(made));
        const end = await endSession(first.id);
        t.assert(answer(t, end).status === 200, `DELETE /v1/sessions/${first.id}: ${show(end)}`);

        let status = 'pending';
        const deadline = Date.now() + SAVE_WAIT_MS;
        while (status === 'pending' && Date.now() < deadline) {
          await sleep(500);
          const got = await getProfile(name);
          t.assert(answer(t, got).status === 200, `GET /v1/profiles/${name}: ${show(got)}`);
          status = (got.response!.json as { data?: { status?: string } }).data?.status ?? 'missing';
        }
        t.assert(status === 'ready', `the profile is ${status} ${Math.round(SAVE_WAIT_MS / 1000)} s after its session ended (expected ready)`);

        second = await newSession(t, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name } } });
        const again = await chromium.connectOverCDP(second.cdp_url, { timeout: 30_000 });
        try {
          const page = again.contexts()[0]?.pages()[0] ?? (await again.contexts()[0]!.newPage());
          await page.goto(new URL('/p2/check', base).toString());
          const state = await page.evaluate(() => (window as unknown as { state: { cookies: string; user: string | null } }).state);
          t.assert(
            state.cookies.includes('p2_session=kept-without-expiry'),
            `the session cookie is missing in the new session: document.cookie = ${JSON.stringify(state.cookies)}`,
          );
          t.assert(
            state.cookies.includes('p2_persistent=kept-with-expiry'),
            `the persistent cookie is missing in the new session: document.cookie = ${JSON.stringify(state.cookies)}`,
          );
          t.equal(state.user, 'conformance', 'local storage in the new session');
        } finally {
          await again.close();
        }
        t.note(`profile ${name} from session ${first.id}, loaded by session ${second.id}`);
      } finally {
        if (second) await endSession(second.id);
        await endSession(first.id);
        await deleteProfile(name);
        ctx.fixtures.unroute('GET', '/p2/login');
        ctx.fixtures.unroute('GET', '/p2/check');
      }
    }),
  ];
});
