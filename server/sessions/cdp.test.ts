// cdp_url end to end: Playwright and Puppeteer through our WebSocket proxy, /json/version
// discovery, several clients at once, reconnects, per-session tokens and their revocation.
import { chromium, type Browser as PwBrowser } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import {
  HEADLESS,
  browsersDirFor,
  createSession,
  endSession,
  eventually,
  getSession,
  gone,
  rootOf,
  sessionEvents,
  startPageServer,
  tryWebSocket,
  type PageServer,
} from './test-support.js';

const withToken = (cdpUrl: string, token: string | null) => {
  const u = new URL(cdpUrl);
  if (token === null) u.searchParams.delete('token');
  else u.searchParams.set('token', token);
  return u.toString();
};

describe('CDP through cdp_url', () => {
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

  it("a CDP client cannot open the server's own files: file: pages are refused, a file input takes only the session's uploads", async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    const browser = await chromium.connectOverCDP(cdp_url);
    try {
      const page = browser.contexts()[0]!.pages()[0]!;
      await expect(page.goto('file:///etc/hostname')).rejects.toThrow(/local files \(file: URLs\) are not available/);
      await expect(page.goto('view-source:file:///etc/hostname')).rejects.toThrow(/local files/);
      const cdp = await browser.newBrowserCDPSession();
      await expect(cdp.send('Target.createTarget', { url: 'FILE:///etc/hostname' })).rejects.toThrow(/local files/);
      // The connection is still good, and web pages still load.
      await page.goto(pages.url('/'));
      expect(await page.title()).toBe('Home');
      await page.setContent('<input type="file" id="f">');
      const pageCdp = await browser.contexts()[0]!.newCDPSession(page);
      const { root } = await pageCdp.send('DOM.getDocument');
      const { nodeId } = await pageCdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: '#f' });
      await expect(pageCdp.send('DOM.setFileInputFiles', { nodeId, files: ['/etc/hostname'] })).rejects.toThrow(
        /is not a file of this session: upload it first/,
      );
      // Playwright over cdp_url reads a path on its own machine and gives the page the bytes.
      await page.setInputFiles('#f', { name: 'a.txt', mimeType: 'text/plain', buffer: Buffer.from('bytes') });
      expect(await page.evaluate(() => (document.getElementById('f') as HTMLInputElement).files![0]!.name)).toBe('a.txt');
    } finally {
      await browser.close();
      await endSession(server, id);
    }
  });

  it('serves the /json/version document (webSocketDebuggerUrl = cdp_url), and Playwright connects through it and through cdp_url', async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    try {
      const token = new URL(cdp_url).searchParams.get('token')!;
      const version = await fetch(`${server.url}/v1/cdp/${id}/json/version?token=${token}`);
      expect(version.status).toBe(200);
      const doc = await version.json();
      expect(doc).toMatchObject({ Browser: expect.stringMatching(/Chrome\/\d+/), 'Protocol-Version': expect.any(String), webSocketDebuggerUrl: cdp_url });
      // The browser's own port never shows.
      expect(JSON.stringify(doc)).not.toMatch(/127\.0\.0\.1:\d+\/devtools/);
      // The cdp_url itself, asked for JSON, answers the same; asked for anything else, 426.
      const asJson = await fetch(`${server.url}/v1/cdp/${id}?token=${token}`, { headers: { accept: 'application/json' } });
      expect((await asJson.json()).webSocketDebuggerUrl).toBe(cdp_url);
      const plain = await fetch(`${server.url}/v1/cdp/${id}?token=${token}`);
      expect(plain.status).toBe(426);
      expect((await plain.json()).error.code).toBe(426);

      // Playwright given the http form discovers the WebSocket through /json/version/.
      const viaHttp = await chromium.connectOverCDP(cdp_url.replace(/^ws/, 'http'));
      const page = await viaHttp.contexts()[0]!.newPage();
      await page.goto(pages.url('/'));
      expect(await page.textContent('#h')).toBe('Hello from the test server');
      await viaHttp.close();

      const direct = await chromium.connectOverCDP(cdp_url);
      expect(
        direct
          .contexts()[0]!
          .pages()
          .map((p) => p.url()),
      ).toContain(pages.url('/'));
      await direct.close();
      // Playwright's close() of a connected browser only disconnects.
      expect((await getSession(server, id)).body.data.status).toBe('running');
    } finally {
      await endSession(server, id);
    }
  });

  it('takes several clients at once (Playwright and Puppeteer), and clients that disconnect and reconnect', async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    let pw: PwBrowser | undefined;
    try {
      pw = await chromium.connectOverCDP(cdp_url);
      const context = pw.contexts()[0]!;
      let pp = await puppeteer.connect({ browserWSEndpoint: cdp_url, defaultViewport: null });

      // A page one client opens, the other sees and drives.
      const seen = context.waitForEvent('page');
      const ppPage = await pp.newPage();
      await ppPage.goto(pages.url('/second'));
      const pwPage = await seen;
      await pwPage.waitForLoadState();
      expect(pwPage.url()).toBe(pages.url('/second'));
      await pwPage.evaluate(() => (document.title = 'set by playwright'));
      expect(await ppPage.title()).toBe('set by playwright');

      // Puppeteer leaves; Playwright carries on; Puppeteer comes back and finds the page.
      await pp.disconnect();
      expect(await pwPage.evaluate(() => 1 + 1)).toBe(2);
      pp = await puppeteer.connect({ browserWSEndpoint: cdp_url, defaultViewport: null });
      const urls = (await pp.pages()).map((p) => p.url());
      expect(urls).toContain(pages.url('/second'));

      // Playwright leaves and comes back.
      await pw.close();
      pw = await chromium.connectOverCDP(cdp_url);
      const again = pw
        .contexts()[0]!
        .pages()
        .find((p) => p.url() === pages.url('/second'));
      expect(await again!.title()).toBe('set by playwright');

      // Three at once.
      const third = await chromium.connectOverCDP(cdp_url);
      expect(third.contexts()[0]!.pages().length).toBeGreaterThanOrEqual(2);
      await third.close();
      await pp.disconnect();
      expect((await getSession(server, id)).body.data.status).toBe('running');
    } finally {
      await pw?.close();
      await endSession(server, id);
    }
  });

  it("refuses a wrong token, the API key and another session's token (401), unknown sessions (404); DELETE drops connected clients and revokes the token", async () => {
    const one = await createSession(server, HEADLESS);
    const two = await createSession(server, HEADLESS);
    try {
      const twoToken = new URL(two.cdp_url).searchParams.get('token')!;
      expect(await tryWebSocket(one.cdp_url)).toBe('open');
      expect(await tryWebSocket(withToken(one.cdp_url, twoToken))).toBe(401);
      expect(await tryWebSocket(withToken(one.cdp_url, server.apiKey))).toBe(401);
      expect(await tryWebSocket(withToken(one.cdp_url, 'x'))).toBe(401);
      expect(await tryWebSocket(withToken(one.cdp_url, null))).toBe(401);
      expect(await tryWebSocket(withToken(one.cdp_url.replace(one.id, '00000000-0000-4000-8000-000000000000'), twoToken))).toBe(404);
      const wrong = await fetch(`${server.url}/v1/cdp/${one.id}/json/version?token=${twoToken}`);
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toEqual({ error: { code: 401, message: expect.any(String) } });
      // The API key does not open it either.
      const byKey = await fetch(`${server.url}/v1/cdp/${one.id}/json/version?token=x`, { headers: { 'service-api-key': server.apiKey } });
      expect(byKey.status).toBe(401);

      const pw = await chromium.connectOverCDP(one.cdp_url);
      const disconnected = new Promise<void>((r) => pw.on('disconnected', () => r()));
      expect((await endSession(server, one.id)).status).toBe(200);
      await disconnected;
      expect(await tryWebSocket(one.cdp_url)).toBe(404);
      // The other session is untouched.
      expect(await tryWebSocket(two.cdp_url)).toBe('open');
    } finally {
      await endSession(server, one.id);
      await endSession(server, two.id);
    }
  });

  it('Browser.close from a client (Puppeteer browser.close()) ends the session cleanly: completed, browser_closed, nothing left', async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    const root = rootOf(browsersDir, id);
    const pp = await puppeteer.connect({ browserWSEndpoint: cdp_url });
    await pp.close();
    const record = await eventually(
      async () => {
        const r = await getSession(server, id);
        return r.body.data.status !== 'running' ? r.body.data : undefined;
      },
      10_000,
      'the session to end',
    );
    expect(record).toMatchObject({ status: 'completed', end_reason: 'browser_closed' });
    const events = await sessionEvents(server.db, id);
    expect(events.map((e) => [e.type, e.data.reason])).toEqual([['session.completed', 'browser_closed']]);
    await eventually(() => !gone(root).directory && gone(root).processes.length === 0, 5_000, 'the root to be removed');
    await endSession(server, id);
  });

  it('DELETE removes the session from the API even when another end was under way (a client had just closed the browser)', async () => {
    for (let i = 0; i < 3; i++) {
      const { id, cdp_url } = await createSession(server, HEADLESS);
      const pp = await puppeteer.connect({ browserWSEndpoint: cdp_url });
      await pp.close();
      const res = await endSession(server, id);
      expect(res.status).toBe(200);
      expect((await res.json()).data.status).toBe('completed');
      expect((await getSession(server, id)).status).toBe(404);
      expect(await sessionEvents(server.db, id)).toHaveLength(1);
    }
  });
});
