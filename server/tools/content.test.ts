// POST /v1/tools/fetch-webpage, the hosted vendor's content tool, over real HTTP: sessionless
// through the web fetch pipeline, or a page of a running session; HTML or Markdown; and its
// refusals.
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession, endSession, HEADLESS, startPageServer, type PageServer } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';

describe('POST /v1/tools/fetch-webpage', () => {
  let server: TestServer;
  let pages: PageServer;

  beforeAll(async () => {
    server = await startTestServer();
    pages = await startPageServer();
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  const content = async (body: unknown, sessionId?: string) => {
    const res = await server.request(`/v1/tools/fetch-webpage${sessionId ? `?sessionId=${sessionId}` : ''}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
  };

  it('sessionless: the rendered page as HTML (the default) or Markdown, billed as a web fetch', async () => {
    const html = await content({ url: pages.url('/article') });
    expect(html.status).toBe(200);
    expect(html.type).toMatch(/^text\/plain/);
    expect(html.text).toMatch(/^<!DOCTYPE html>/i);
    expect(html.text).toContain('<b>bold</b>');

    const md = await content({ url: pages.url('/article'), format: 'markdown', wait: 1500 });
    expect(md.status).toBe(200);
    expect(md.text).toContain('# Title');
    expect(md.text).toContain('First **bold** paragraph with [a link](/second).');
    // `wait` gives the late paragraph its second.
    expect(md.text).toContain('Late paragraph');
    expect(md.text).not.toContain('<script');

    const [{ n }] = await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM usage_ledger WHERE kind = 'fetch'`);
    expect(n).toBe(2);
  });

  it('in a session: the page on screen, a page by index, a new tab; navigated first when given a url; waits when asked', async () => {
    const s = await createSession(server, HEADLESS);
    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      const first = browser.contexts()[0]!.pages()[0]!;
      await first.goto(pages.url('/'));
      // The page as it is: nothing billed, no navigation.
      const onScreen = await content({ format: 'markdown' }, s.id);
      expect(onScreen.status).toBe(200);
      expect(onScreen.text).toContain('# Hello from the test server');

      // Navigated there, read at load, then a second later.
      const atLoad = await content({ url: pages.url('/article'), format: 'markdown' }, s.id);
      expect(atLoad.text).toContain('First **bold** paragraph');
      expect(atLoad.text).not.toContain('Late paragraph');
      expect(first.url()).toBe(pages.url('/article'));
      const later = await content({ url: pages.url('/article'), format: 'markdown', wait: 1500 }, s.id);
      expect(later.text).toContain('Late paragraph');

      // A new tab stays open; page_index reads a page in the order GET .../pages lists them.
      const tab = await content({ url: pages.url('/second'), new_page: true }, s.id);
      expect(tab.text).toContain('<title>Second</title>');
      const listed = (await (await server.request(`/v1/sessions/${s.id}/pages`)).json()).data as { url: string }[];
      expect(listed.map((p) => p.url).sort()).toEqual([pages.url('/article'), pages.url('/second')].sort());
      for (const [i, p] of listed.entries())
        expect((await content({ page_index: i }, s.id)).text).toContain(p.url.endsWith('/second') ? 'second page' : 'First');

      const [{ n }] = await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM usage_ledger WHERE kind = 'fetch'`);
      expect(n).toBe(2); // the sessionless test's two; none here
    } finally {
      await browser.close().catch(() => {});
      await endSession(server, s.id);
    }
  });

  it('refuses with the general error body: no url and no session, session-only options, a file, an unknown or ended session, a bad page_index', async () => {
    const refused = async (body: unknown, status: number, message: RegExp, sessionId?: string) => {
      const r = await content(body, sessionId);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(JSON.parse(r.text).error).toEqual({ code: status, message: expect.stringMatching(message) });
    };
    await refused({}, 400, /url is required/);
    await refused({ url: pages.url('/'), page_index: 0 }, 400, /give its sessionId/);
    await refused({ url: pages.url('/'), return_partial_on_timeout: true }, 400, /give its sessionId/);
    await refused({ url: pages.url('/doc.pdf') }, 400, /application\/pdf, not an HTML page/);
    await refused({ url: 'ftp://example.com/' }, 400, /./);
    await refused({ format: 'text' }, 400, /format/);
    await refused({ url: pages.url('/') }, 404, /Session not found/, '00000000-0000-4000-8000-000000000000');

    const s = await createSession(server, HEADLESS);
    await refused({ page_index: 5 }, 400, /page_index 5: the session has 1 page/, s.id);
    await endSession(server, s.id);
    await refused({}, 404, /Session not found/, s.id);
  });
});
