// POST /v1/tools/execute-code over real HTTP: a snippet run in the sandbox
// against a running session's Chromium (the same page a client sees), its console output,
// and every refusal: syntax errors naming the line, thrown errors with their line, results
// that are not JSON, a session ending under the run, sessions that are not the project's or
// not running. The time limit (408): timeout.test.ts.
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import puppeteer from 'puppeteer-core';
import { createSession, endSession, eventually, getSession, HEADLESS, startPageServer, type PageServer } from '../sessions/test-support.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { executeCode } from './test-support.js';

describe.each(browserBackends)('POST /v1/tools/execute-code (%s)', (backend) => {
  let server: TestServer;
  let pages: PageServer;
  let sessionId: string;
  let cdpUrl: string;

  beforeAll(async () => {
    server = await startTestServer({ backend });
    pages = await startPageServer();
    const s = await createSession(server, HEADLESS);
    sessionId = s.id;
    cdpUrl = s.cdp_url;
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  const execute = (code: unknown, id: string = sessionId, key?: string) => executeCode(server, code, id, key);

  it('runs the code against the session: its result and console output', async () => {
    const { status, body } = await execute(
      `await page.goto(${JSON.stringify(pages.url('/'))});\nconsole.log('at', new URL(page.url()).pathname);\nconst h: string | null = await page.textContent('#h');\nreturn { title: await page.title(), h, pages: context.pages().length, connected: browser.isConnected() };`,
    );
    expect(status).toBe(200);
    expect(body).toEqual({
      success: true,
      message: 'Code ran to its end',
      output: { title: 'Home', h: 'Hello from the test server', pages: expect.any(Number), connected: true },
      error: null,
      executionResultId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      logs: ['at /'],
    });
    // The same browser a client of cdp_url sees: the page the code left.
    const browser = await chromium.connectOverCDP(cdpUrl);
    try {
      expect(
        browser
          .contexts()[0]!
          .pages()
          .some((p) => p.url() === pages.url('/')),
      ).toBe(true);
    } finally {
      await browser.close();
    }
    expect((await execute('return;')).body.output).toBeNull();
  });

  // A headless browser shows each tab a client opens in a window of its own, both visible:
  // the one brought to front is told by its focus. Driven with Puppeteer, which leaves focus
  // as the browser has it: Playwright turns on focus emulation (every page it attaches then
  // says it has the focus) and the sandbox's own Playwright turns it off again as it leaves,
  // so with a Playwright client here the page on screen was ambiguous until a run had been
  // and gone.
  it('gives the code the page on screen as `page`', async () => {
    const browser = await puppeteer.connect({ browserWSEndpoint: cdpUrl, defaultViewport: null });
    try {
      const second = await browser.newPage();
      await second.goto(pages.url('/second'));
      await second.bringToFront();
      // The browser tells the page it is in front a moment after bringToFront returns.
      await second.waitForFunction(() => document.hasFocus(), { timeout: 10_000 });
      expect((await execute('return [page.url(), await page.title()];')).body.output).toEqual([pages.url('/second'), 'Second']);
      await second.close();
    } finally {
      await browser.disconnect();
    }
  });

  it('answers 400 for a syntax error naming the line, and for thrown errors with their line', async () => {
    const syntax = await execute('const a = 1;\nreturn a +;');
    expect(syntax).toEqual({ status: 400, body: { error: { code: 400, message: expect.stringMatching(/^Syntax error at line 2: /) } } });
    const thrown = await execute("const n = 2;\nif (n > 1) throw new Error('too many: ' + n);\nreturn n;");
    expect(thrown).toEqual({ status: 400, body: { error: { code: 400, message: 'Error at line 2: too many: 2' } } });
    const notJson = await execute('return () => 1;');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.message).toBe('the result must be JSON: the return value is a function');
    const bad = await execute('');
    expect(bad.status).toBe(400);
  });

  it("answers 404 for another project's, an unknown or a deleted session, 409 for one that ended", async () => {
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap' });
    expect((await execute('return 1;', sessionId, other.key)).status).toBe(404);
    expect((await execute('return 1;', '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const deleted = await createSession(server, HEADLESS);
    expect((await endSession(server, deleted.id)).status).toBe(200);
    expect((await execute('return 1;', deleted.id)).status).toBe(404);
    // Ended by its own client (Browser.close): still the project's, no longer running.
    const closed = await createSession(server, HEADLESS);
    const pp = await puppeteer.connect({ browserWSEndpoint: closed.cdp_url });
    await pp.close();
    await eventually(async () => (await getSession(server, closed.id)).body.data.status !== 'running', 10_000, 'the session to end');
    expect(await execute('return 1;', closed.id)).toEqual({ status: 409, body: { error: { code: 409, message: 'Session is not running' } } });
  });

  it('answers 409 when the session ends while the code runs, and the server goes on', async () => {
    const s = await createSession(server, HEADLESS);
    // The code tells it runs (its page asks for /code-running), then waits for ever.
    const running = execute(`await page.goto(${JSON.stringify(pages.url('/code-running'))});\nawait new Promise(() => {});`, s.id);
    await eventually(() => pages.requests.includes('GET /code-running'), 30_000, 'the code to run');
    await endSession(server, s.id);
    expect(await running).toEqual({ status: 409, body: { error: { code: 409, message: 'Session ended while the code ran' } } });
    expect((await execute('return 40 + 2;')).body.output).toBe(42);
  });
});
