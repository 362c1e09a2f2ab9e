// Code execution in a session (POST /v1/tools/execute-code): X1–X4. The code's page loads
// one of the suite's own fixture pages, which the session's browser reaches; the code's
// own network (not the browser's) reaches nothing but the session.
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { check, defineRules, type T } from '../runner.js';

/** Cheap sessions: no window, no recording, and ended by the server if a check cannot end them. */
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false }, timeout: { idle_timeout: 2, max_duration: 5 } } };
const RUN_TIMEOUT_MS = 90_000;

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}
const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

export default defineRules((ctx: SuiteContext) => {
  const createSessionOp = ctx.contract.operation('createSession');
  const endSessionOp = ctx.contract.operation('endSession');
  const executeOp = ctx.contract.operation('executeCode');

  const newSession = async (t: T): Promise<string> => {
    const ex = await ctx.call(await ctx.build(createSessionOp), { bodyValue: HEADLESS });
    t.assert(answer(t, ex).status === 200, `POST /v1/sessions answered ${show(ex)}`);
    return (ex.response!.json as { data: { id: string } }).data.id;
  };
  const endSession = (id: string) => ctx.call(buildRequest(ctx.contract, endSessionOp, { pathParams: { session_id: id } }));
  const execute = (sessionId: string, code: string) => {
    const built = buildRequest(ctx.contract, executeOp);
    built.query = [['sessionId', sessionId]];
    return ctx.call(built, { bodyValue: { code }, timeoutMs: RUN_TIMEOUT_MS });
  };
  /** Runs `body` with a running session, skipping when the server does not implement the tool. */
  const withSession = async (t: T, body: (id: string) => Promise<void>) => {
    const id = await newSession(t);
    try {
      const probe = await execute(id, 'return 1;');
      if (answer(t, probe).status === 501) t.skip('execute-code is not implemented by this server (501)');
      await body(id);
    } finally {
      await endSession(id);
    }
  };
  const json = (ex: Exchange) => ex.response?.json as Record<string, any> | undefined;

  return [
    check(
      'X1 execute-code runs the code as the body of an async function given page, context and browser: 200 with its JSON result and console output',
      async (t: T) => {
        const url = await ctx.fixtures.url('/x1-page');
        ctx.fixtures.route('GET', '/x1-page', (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>X1 page</title><p id="p">from the fixture</p>');
        });
        await withSession(t, async (id) => {
          const ex = await execute(
            id,
            `await page.goto(${JSON.stringify(url)});\nconsole.log('loaded');\nreturn { title: await page.title(), text: await page.textContent('#p'), pages: context.pages().length >= 1, connected: browser.isConnected() };`,
          );
          t.assert(answer(t, ex).status === 200, show(ex));
          const body = json(ex)!;
          t.assert(body.success === true && body.error === null, `success/error: ${show(ex)}`);
          t.assert(
            JSON.stringify(body.output) === JSON.stringify({ title: 'X1 page', text: 'from the fixture', pages: true, connected: true }),
            `output: ${show(ex)}`,
          );
          t.assert(Array.isArray(body.logs) && body.logs.includes('loaded'), `logs: ${show(ex)}`);
          t.note(show(ex));
        });
      },
    ),

    check('X2 a syntax error answers 400 naming its line; a thrown error answers 400 with its message and line', async (t: T) => {
      await withSession(t, async (id) => {
        const syntax = await execute(id, 'const a = 1;\nreturn a +;');
        t.assert(answer(t, syntax).status === 400, show(syntax));
        t.assert(/line 2\b/.test(String(json(syntax)?.error?.message)), `the line is not named: ${show(syntax)}`);
        const thrown = await execute(id, "const n = 3;\n\nthrow new Error('x2 failure ' + n);");
        t.assert(answer(t, thrown).status === 400, show(thrown));
        const message = String(json(thrown)?.error?.message);
        t.assert(message.includes('x2 failure 3') && /line 3\b/.test(message), `message and line: ${show(thrown)}`);
      });
    }),

    check("X3 the code's own network reaches nothing but its session, and it sees no environment or files of the server", async (t: T) => {
      let reached = 0;
      const url = await ctx.fixtures.url('/x3-target');
      ctx.fixtures.route('GET', '/x3-target', (_req, res) => {
        reached++;
        res.writeHead(200).end('reached');
      });
      await withSession(t, async (id) => {
        const ex = await execute(
          id,
          `const fs = await import('node:fs');
let net;
try { const r = await fetch(${JSON.stringify(url)}); net = 'status ' + r.status; } catch (e) { net = 'failed'; }
let passwd;
try { fs.readFileSync('/etc/passwd'); passwd = 'read'; } catch (e) { passwd = 'failed'; }
return { net, passwd, env: Object.keys(process.env).filter((k) => !['HOME', 'PWD'].includes(k)) };`,
        );
        t.assert(answer(t, ex).status === 200, show(ex));
        const out = json(ex)!.output as { net: string; passwd: string; env: string[] };
        t.assert(out.net === 'failed' && reached === 0, `the code's fetch reached the fixture server: ${show(ex)}`);
        t.assert(out.passwd === 'failed', `/etc/passwd was readable: ${show(ex)}`);
        t.assert(out.env.length === 0, `environment variables visible: ${out.env.join(', ')}`);
      });
    }),

    check('X4 execute-code in an unknown session answers 404, in an ended one 4xx', async (t: T) => {
      const unknown = await execute('00000000-0000-4000-8000-000000000000', 'return 1;');
      if (answer(t, unknown).status === 501) t.skip('execute-code is not implemented by this server (501)');
      t.assert(unknown.response!.status === 404, show(unknown));
      const id = await newSession(t);
      await endSession(id);
      const ended = await execute(id, 'return 1;');
      t.assert(answer(t, ended).status >= 400 && ended.response!.status < 500, show(ended));
    }),
  ];
});
