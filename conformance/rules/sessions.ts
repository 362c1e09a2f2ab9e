// Sessions (docs/conformance-rules.md): S1, S2, S4, S5, S6, S7, S8, S10, S11, and G9 for
// sessions. Every session a check makes goes through ctx.call, so the run's cleanup ends
// whatever a failing check left; the checks end their own sessions as they go.
//
// Order matters:
//  - S10 needs about a minute of waiting. Its first check starts the two sessions (1-minute
//    idle_timeout, 1-minute max_duration) and its second, last of this module, waits for
//    them: the other checks run in between.
//  - S5 exhausts a key's session-creation allowance for up to a minute. It runs late, and
//    with another project's key when the suite has one, so that later checks creating
//    sessions with the run's key are not refused.
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser } from 'playwright-core';
import { WebSocket } from 'ws';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { check, defineRules, type T } from '../runner.js';

/** Cheap sessions: no window, and ended by the server if a check cannot end them. */
const HEADLESS = { browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 2, max_duration: 5 } } };
/** S5: how many creation requests at once, at most in all, and for how long. */
const S5_WORKERS = 12;
const S5_MAX_ATTEMPTS = 400;
const S5_MAX_MS = 120_000;
/** S10: both sessions end one minute after creation; a check of the server's clock every second or so is allowed for. */
const S10_MINUTE_MS = 60_000;
const S10_GRACE_MS = 30_000;

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

/** The general error body {error: {code, message}}, or a description of what it is instead. */
function errorBody(res: HttpResponse): { code: unknown; message: unknown } | undefined {
  const body = res.json as { error?: { code?: unknown; message?: unknown } } | undefined;
  const e = body?.error;
  return e && typeof e === 'object' ? { code: e.code, message: e.message } : undefined;
}

/** Opens a WebSocket: 'open' (and the socket), or why not (an HTTP status or an error). */
function openWebSocket(url: string, timeoutMs = 15_000): Promise<{ ws?: WebSocket; outcome: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs });
    ws.once('open', () => resolve({ ws, outcome: 'open' }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ outcome: `HTTP ${res.statusCode}` });
      ws.terminate();
    });
    ws.once('error', (err) => resolve({ outcome: err.message }));
  });
}

/** Sends one CDP command on a socket and resolves with its answer (or rejects). */
function cdpCommand(ws: WebSocket, method: string, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const id = Math.floor(Math.random() * 1e9);
    const timer = setTimeout(() => reject(new Error(`no answer to ${method} within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (raw: Buffer) => {
      let msg: { id?: number; result?: Record<string, unknown>; error?: unknown };
      try {
        msg = JSON.parse(raw.toString());
      } catch {
        return;
      }
      if (msg.id !== id) return;
      clearTimeout(timer);
      ws.off('message', onMessage);
      if (msg.result) resolve(msg.result);
      else reject(new Error(`${method} failed: ${JSON.stringify(msg.error)}`));
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ id, method, params: {} }));
  });
}

export default defineRules((ctx: SuiteContext) => {
  const createOp = ctx.contract.operation('createSession');
  const getOp = ctx.contract.operation('getSession');
  const endOp = ctx.contract.operation('endSession');
  const tagsOp = ctx.contract.operation('replaceSessionTags');

  const createSession = async (body: unknown, key?: string): Promise<Exchange> =>
    ctx.call(await ctx.build(createOp), { bodyValue: body, ...(key ? { key: { value: key } } : {}) });
  const getSession = (id: string) => ctx.call(buildRequest(ctx.contract, getOp, { pathParams: { session_id: id } }));
  const endSession = (id: string, key?: string) =>
    ctx.call(buildRequest(ctx.contract, endOp, { pathParams: { session_id: id } }), key ? { key: { value: key } } : {});
  const putTags = (id: string, body: unknown, options: { key?: 'main' | 'wrong'; raw?: string } = {}) =>
    ctx.call(buildRequest(ctx.contract, tagsOp, { pathParams: { session_id: id }, body: 'minimal' }), {
      key: options.key ?? 'main',
      ...(options.raw !== undefined ? { rawBody: { contentType: 'application/json', text: options.raw } } : { bodyValue: body }),
    });

  /** A new session (200 required), as {id, cdp_url, live_view_url}. */
  const newSession = async (t: T, body: unknown = HEADLESS): Promise<{ id: string; cdp_url: string; live_view_url: string }> => {
    const ex = await createSession(body);
    const res = answer(t, ex);
    t.assert(res.status === 200, `POST /v1/sessions answered ${show(ex)}`);
    const data = (res.json as { data?: Record<string, unknown> } | undefined)?.data;
    t.assert(data && typeof data.id === 'string' && typeof data.cdp_url === 'string', `POST /v1/sessions answered no data.id and data.cdp_url: ${show(ex)}`);
    return data as { id: string; cdp_url: string; live_view_url: string };
  };

  const tagsOf = async (t: T, id: string): Promise<unknown> => {
    const ex = await getSession(id);
    const res = answer(t, ex);
    t.assert(res.status === 200, `GET /v1/sessions/${id} answered ${show(ex)}`);
    return (res.json as { data?: { tags?: unknown } } | undefined)?.data?.tags;
  };

  // S10's sessions, from its first check to its last.
  let s10: { started: number; idle?: string; max?: string; problem?: string } | undefined;

  return [
    check('S10 sessions with a 1-minute idle_timeout and a 1-minute max_duration start (checked at the end of the sessions rules)', async (t: T) => {
      s10 = { started: Date.now() };
      const [idle, max] = await Promise.all([
        createSession({ browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 1, max_duration: 5 } } }),
        createSession({ browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 5, max_duration: 1 } } }),
      ]);
      for (const [ex, what] of [
        [idle, 'idle_timeout 1'],
        [max, 'max_duration 1'],
      ] as const) {
        const res = answer(t, ex);
        if (res.status !== 200) s10.problem = `the session with ${what} could not be created`;
        t.assert(res.status === 200, `POST /v1/sessions with timeout ${what} answered ${show(ex)}`);
      }
      s10.idle = (idle.response!.json as { data: { id: string } }).data.id;
      s10.max = (max.response!.json as { data: { id: string } }).data.id;
      t.note(`idle_timeout session ${s10.idle}, max_duration session ${s10.max}`);
    }),

    check('S1 POST /v1/sessions with {} answers 200 {data: {id, cdp_url, live_view_url}}, all strings', async (t: T) => {
      const ex = await createSession({});
      const res = answer(t, ex);
      t.assert(res.status === 200, `answered ${show(ex)}`);
      const body = res.json as { data?: Record<string, unknown> } | undefined;
      t.assert(body && typeof body === 'object' && body.data && typeof body.data === 'object', `no data object: ${show(ex)}`);
      for (const field of ['id', 'cdp_url', 'live_view_url']) {
        t.assert(typeof body.data[field] === 'string' && (body.data[field] as string).length > 0, `data.${field} is not a non-empty string: ${show(ex)}`);
      }
      const id = body.data.id as string;
      const end = await endSession(id);
      t.note(`session ${id}; ended: DELETE → ${end.response?.status ?? end.error}`);
    }),

    check('S2 the cdp_url accepts a CDP client (Playwright connectOverCDP), which can open a page', async (t: T) => {
      const s = await newSession(t);
      try {
        let browser: Browser;
        try {
          browser = await chromium.connectOverCDP(s.cdp_url, { timeout: 30_000 });
        } catch (err) {
          t.fail(`Playwright connectOverCDP(${s.cdp_url.replace(/token=[^&]+/, 'token=…')}) failed: ${(err as Error).message.split('\n')[0]}`);
        }
        try {
          const context = browser.contexts()[0] ?? (await browser.newContext());
          const page = await context.newPage();
          await page.setContent('<title>S2</title><p id="s2">opened through cdp_url</p>');
          t.equal(await page.textContent('#s2'), 'opened through cdp_url', 'the page opened through cdp_url');
          t.equal(await page.evaluate(() => 6 * 7), 42, 'script in that page');
          t.note(`${browser.version()}; ${context.pages().length} page(s)`);
        } finally {
          await browser.close().catch(() => {});
        }
      } finally {
        await endSession(s.id);
      }
    }),

    check(
      "S11 the vendor SDK's CDP address over http: /json/version?apiKey&sessionId names the session's cdp_url, connectOverCDP on http://BASE?apiKey&sessionId opens a page, a wrong key answers 401",
      async (t: T) => {
        const s = await newSession(t);
        const query = (key: string) => `?apiKey=${encodeURIComponent(key)}&sessionId=${encodeURIComponent(s.id)}`;
        try {
          for (const path of ['/json/version', '/json/version/']) {
            const res = await fetch(`${ctx.baseUrl}${path}${query(ctx.mainKey ?? '')}`, { signal: AbortSignal.timeout(ctx.timeoutMs) });
            t.assert(res.status === 200, `GET ${path}?apiKey=…&sessionId=${s.id} answered ${res.status}`);
            const doc = (await res.json()) as { webSocketDebuggerUrl?: unknown };
            t.equal(doc.webSocketDebuggerUrl, s.cdp_url, `webSocketDebuggerUrl of ${path}`);
          }
          const wrong = await fetch(`${ctx.baseUrl}/json/version${query(ctx.wrongKey)}`, { signal: AbortSignal.timeout(ctx.timeoutMs) });
          t.equal(wrong.status, 401, 'a wrong apiKey');
          let browser: Browser;
          try {
            browser = await chromium.connectOverCDP(`${ctx.baseUrl}${query(ctx.mainKey ?? '')}`, { timeout: 30_000 });
          } catch (err) {
            t.fail(`Playwright connectOverCDP(BASE?apiKey=…&sessionId=${s.id}) failed: ${(err as Error).message.split('\n')[0]}`);
          }
          try {
            const page = await (browser.contexts()[0] ?? (await browser.newContext())).newPage();
            t.equal(await page.evaluate(() => 6 * 7), 42, 'script in a page opened through the http form');
          } finally {
            await browser.close().catch(() => {});
          }
        } finally {
          await endSession(s.id);
        }
      },
    ),

    check('S4 the captcha solver without an active proxy answers an error body with code 400 saying the solver requires an active proxy', async (t: T) => {
      const bodies = [
        { browser: { headless: { active: true }, captcha_solver: { active: true } } },
        {
          browser: { headless: { active: true }, captcha_solver: { active: true } },
          session: { proxy: { active: false, type: 'custom', server: 'http://proxy.invalid:3128' } },
        },
      ];
      for (const body of bodies) {
        const ex = await createSession(body);
        const res = answer(t, ex);
        const created = (res.json as { data?: { id?: unknown } } | undefined)?.data?.id;
        if (res.status === 200 && typeof created === 'string') await endSession(created);
        const e = errorBody(res);
        t.assert(e, `no error body {error: {code, message}}: ${show(ex)}`);
        t.assert(e.code === 400, `error.code is ${JSON.stringify(e.code)}, not 400: ${show(ex)}`);
        t.assert(res.status >= 400 && res.status < 500, `HTTP status ${res.status} for a refused request: ${show(ex)}`);
        t.assert(
          typeof e.message === 'string' && /captcha|solver/i.test(e.message) && /proxy/i.test(e.message),
          `the message does not say the captcha solver requires an active proxy: ${JSON.stringify(e.message)}`,
        );
      }
      t.note('captcha solver alone, and with an inactive proxy: 400');
    }),

    check('S6 DELETE /v1/sessions/{id} answers {data: {status}} and terminates the session: its cdp_url no longer connects', async (t: T) => {
      const s = await newSession(t);
      const before = await openWebSocket(s.cdp_url);
      t.assert(before.ws, `the cdp_url of a running session does not connect (${before.outcome}), so its end could not be told`);
      const ws = before.ws;
      let closedBy: number | undefined;
      const closed = new Promise<void>((resolve) =>
        ws.once('close', (code) => {
          closedBy = code;
          resolve();
        }),
      );
      try {
        const version = await cdpCommand(ws, 'Browser.getVersion');
        t.assert(typeof version.product === 'string', `Browser.getVersion through cdp_url answered ${JSON.stringify(version)}`);
        const ex = await endSession(s.id);
        const res = answer(t, ex);
        t.assert(res.status === 200, `DELETE answered ${show(ex)}`);
        const status = (res.json as { data?: { status?: unknown } } | undefined)?.data?.status;
        t.assert(typeof status === 'string', `DELETE answered no data.status string: ${show(ex)}`);
        // The connected client is dropped, and the URL refuses new ones.
        await Promise.race([closed, sleep(15_000)]);
        t.assert(closedBy !== undefined, 'a CDP connection opened before the DELETE was still open 15 s after it');
        const after = await openWebSocket(s.cdp_url);
        after.ws?.terminate();
        t.assert(!after.ws, 'the cdp_url still connects after DELETE');
        t.note(`DELETE → {data: {status: ${JSON.stringify(status)}}}; open connection closed (${closedBy}); a new one: ${after.outcome}`);
      } finally {
        ws.terminate();
      }
    }),

    check('S7 PUT .../tags replaces every tag in the given order and answers {success: true, message}; a second put replaces the first', async (t: T) => {
      const s = await newSession(t, { ...HEADLESS, session: { ...HEADLESS.session, tags: ['initial', 'tags'] } });
      try {
        const first = await putTags(s.id, { tags: ['zulu', 'alpha', 'mike'] });
        const res = answer(t, first);
        t.assert(res.status === 200, `PUT tags answered ${show(first)}`);
        const body = res.json as { success?: unknown; message?: unknown } | undefined;
        t.assert(body?.success === true, `success is not true: ${show(first)}`);
        t.assert(typeof body.message === 'string', `no message string: ${show(first)}`);
        t.equal(await tagsOf(t, s.id), ['zulu', 'alpha', 'mike'], 'the tags after the first put (every earlier tag replaced, order kept)');
        const second = await putTags(s.id, { tags: ['bravo', 'alpha'] });
        t.assert(answer(t, second).status === 200, `the second PUT answered ${show(second)}`);
        t.equal(await tagsOf(t, s.id), ['bravo', 'alpha'], 'the tags after the second put');
        const empty = await putTags(s.id, { tags: [] });
        t.assert(answer(t, empty).status === 200, `PUT {tags: []} answered ${show(empty)}`);
        t.equal(await tagsOf(t, s.id), [], 'the tags after putting an empty list');
      } finally {
        await endSession(s.id);
      }
    }),

    check('S8 tags errors: 400 for a missing or non-array tags, 401 for a bad key, 404 for an unknown session', async (t: T) => {
      const s = await newSession(t);
      try {
        const cases: [string, Promise<Exchange>, number][] = [
          ['no tags field', putTags(s.id, {}), 400],
          ['tags a string', putTags(s.id, { tags: 'nightly' }), 400],
          ['tags an object', putTags(s.id, { tags: { a: 1 } }), 400],
          ['a wrong key', putTags(s.id, { tags: ['x'] }, { key: 'wrong' }), 401],
          ['an unknown session', putTags('00000000-0000-4000-8000-000000000000', { tags: ['x'] }), 404],
        ];
        for (const [what, pending, status] of cases) {
          const ex = await pending;
          const res = answer(t, ex);
          t.assert(res.status === status, `${what}: answered ${show(ex)}, not ${status}`);
          const e = errorBody(res);
          t.assert(e && e.code === status && typeof e.message === 'string', `${what}: not the error body {error: {code: ${status}, message}}: ${show(ex)}`);
        }
        t.equal(await tagsOf(t, s.id), [], 'the tags of the session after the refused puts (none of them changed anything)');
      } finally {
        await endSession(s.id);
      }
    }),

    check('G9 sessions: create → get → delete → get answers 404', async (t: T) => {
      const s = await newSession(t);
      const got = await getSession(s.id);
      t.assert(answer(t, got).status === 200, `GET after create answered ${show(got)}`);
      t.equal((got.response!.json as { data?: { id?: unknown } }).data?.id, s.id, 'the id GET answers');
      const ended = await endSession(s.id);
      t.assert(answer(t, ended).status === 200, `DELETE answered ${show(ended)}`);
      const after = await getSession(s.id);
      t.assert(answer(t, after).status === 404, `GET after DELETE answered ${show(after)}, not 404`);
      const again = await endSession(s.id);
      t.assert(answer(t, again).status === 404, `a second DELETE answered ${show(again)}, not 404`);
    }),

    check('S5 session creation past the rate limit answers an error body with code 429 saying so', async (t: T) => {
      // Another project's key when there is one: the run's key keeps its allowance.
      const other = await ctx.otherKey();
      const key = other.key ?? ctx.mainKey;
      const whose = other.key ? "another project's key" : `the run's key (${other.reason ?? 'no other key'})`;
      let attempts = 0;
      let created = 0;
      let busy = 0;
      let limited: Exchange | undefined;
      let unexpected: Exchange | undefined;
      const deadline = Date.now() + S5_MAX_MS;
      const worker = async () => {
        while (!limited && !unexpected && attempts < S5_MAX_ATTEMPTS && Date.now() < deadline) {
          attempts++;
          const ex = await createSession(HEADLESS, key);
          const res = ex.response;
          if (!res) {
            unexpected = ex;
            break;
          }
          if (res.status === 200) {
            created++;
            const id = (res.json as { data?: { id?: unknown } } | undefined)?.data?.id;
            if (typeof id === 'string') await endSession(id, key);
          } else if (res.status === 429) {
            const message = errorBody(res)?.message;
            if (typeof message === 'string' && /rate/i.test(message)) limited ??= ex;
            else {
              // No browser free (the concurrency limit): wait for one, then try again.
              busy++;
              await sleep(250);
            }
          } else {
            unexpected = ex;
          }
        }
      };
      await Promise.all(Array.from({ length: S5_WORKERS }, worker));
      t.assert(!unexpected, `a creation answered neither 200 nor 429: ${unexpected ? show(unexpected) : ''}`);
      t.assert(
        limited,
        `no 429 about the rate limit after ${attempts} creation requests with ${whose} (${created} sessions made, ${busy} answers "no browser free")`,
      );
      const e = errorBody(limited.response!);
      t.assert(e && e.code === 429, `the 429 has no error body with code 429: ${show(limited)}`);
      t.assert(
        typeof e.message === 'string' && /rate limit/i.test(e.message),
        `the message does not say the rate limit was exceeded: ${JSON.stringify(e.message)}`,
      );
      t.note(`with ${whose}: 429 ${JSON.stringify(e.message)} after ${created} sessions made (each ended at once) in ${attempts} requests`);
    }),

    check('S10 idle_timeout and max_duration end a session; it is then reported completed', async (t: T) => {
      if (!s10) t.skip('its sessions were not started (the first S10 check did not run)');
      if (s10.problem || !s10.idle || !s10.max) t.skip(`its sessions were not started: ${s10.problem ?? 'see the first S10 check'}`);
      const { idle, max } = s10;
      const until = s10.started + S10_MINUTE_MS + S10_GRACE_MS;
      const ended: Record<string, Record<string, unknown>> = {};
      for (;;) {
        for (const id of [idle, max]) {
          if (ended[id]) continue;
          const ex = await getSession(id);
          const res = answer(t, ex);
          t.assert(res.status === 200, `GET /v1/sessions/${id} answered ${show(ex)}`);
          const data = (res.json as { data: Record<string, unknown> }).data;
          if (data.status !== 'running' && data.status !== 'starting') ended[id] = data;
        }
        if ((ended[idle] && ended[max]) || Date.now() > until) break;
        await sleep(2_000);
      }
      const waited = Math.round((Date.now() - s10.started) / 1000);
      for (const [id, reason] of [
        [idle, 'idle_timeout'],
        [max, 'max_duration'],
      ] as const) {
        const data = ended[id];
        t.assert(data, `the session with a 1-minute ${reason} was still running ${waited} s after it was created`);
        t.equal(data.status, 'completed', `the status of the session ended by ${reason}`);
        t.equal(data.end_reason, reason, `the end_reason of the session ended by ${reason}`);
        t.assert(
          typeof data.duration === 'number' && data.duration >= 55,
          `the session ended by ${reason} lasted ${JSON.stringify(data.duration)} s, not about a minute`,
        );
      }
      t.note(`both completed (idle_timeout, max_duration) ${waited} s after creation`);
    }),
  ];
});
