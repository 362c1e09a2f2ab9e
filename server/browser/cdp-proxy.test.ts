// The proxy on a real HTTP server, in front of a real Chromium (and, for the frame-level
// checks, a small WebSocket server of our own as the upstream).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { WebSocket, WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byteLength, createCdpProxy, parseCdpPath, versionDocument, type CdpProxy, type CdpTarget } from './cdp-proxy.js';
import { launchBrowser, type RunningBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { chromiumPath, eventually, tempBrowsersDir, testLog } from './test-support.js';

const log = testLog();
let browsersDir: string;
let browser: RunningBrowser;

interface Hosted {
  server: Server;
  proxy: CdpProxy;
  base: string; // ws://127.0.0.1:PORT
  usage: { activity: number; bytes: number };
  resolveCalls: string[];
  close(): Promise<void>;
}

/** An HTTP server the way the HTTP layer will host the proxy: upgrades plus json/version. */
async function host(sessions: Record<string, { token: string; wsEndpoint: string }>): Promise<Hosted> {
  const usage = { activity: 0, bytes: 0 };
  const resolveCalls: string[] = [];
  const target = (wsEndpoint: string): CdpTarget => ({
    wsEndpoint,
    onMessage: (_from, data) => {
      usage.activity++;
      usage.bytes += byteLength(data);
    },
  });
  const proxy = createCdpProxy({
    log,
    async resolve(sessionId, credential) {
      resolveCalls.push(sessionId);
      const s = sessions[sessionId];
      if (!s) return 'not_found';
      return 'token' in credential && credential.token === s.token ? target(s.wsEndpoint) : null;
    },
  });
  const server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://x');
    const m = /^\/v1\/cdp\/([^/]+)\/json\/version\/?$/.exec(url.pathname);
    const s = m ? sessions[m[1]!] : undefined;
    if (!m || !s || url.searchParams.get('token') !== s.token) return void res.writeHead(404).end();
    const publicUrl = `ws://${req.headers.host}/v1/cdp/${m[1]}?token=${s.token}`;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await versionDocument(s.wsEndpoint, publicUrl)));
  });
  server.on('upgrade', (req, socket, head) => {
    if (!proxy.handleUpgrade(req, socket, head)) socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    proxy,
    base,
    usage,
    resolveCalls,
    close: async () => {
      proxy.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Status of a refused upgrade, or 'open'. */
function upgradeStatus(url: string): Promise<number | 'open' | 'error'> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode!);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve('open');
      ws.close();
    });
    ws.on('error', () => resolve('error'));
  });
}

function openRaw(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

function nextMessage(ws: WebSocket): Promise<{ data: Buffer; binary: boolean }> {
  return new Promise((resolve) => ws.once('message', (data, binary) => resolve({ data: data as Buffer, binary })));
}

let hosted: Hosted;
let cdpUrl: string;

beforeAll(async () => {
  browsersDir = tempBrowsersDir();
  browser = await launchBrowser(
    { ...DEFAULT_LAUNCH_OPTIONS, headless: true, viewport: { width: 1280, height: 720 } },
    {
      chromiumPath,
      rootDir: join(browsersDir, 's1'),
      log,
    },
  );
  hosted = await host({ s1: { token: 'good-token', wsEndpoint: browser.wsEndpoint } });
  cdpUrl = `${hosted.base}/v1/cdp/s1?token=good-token`;
});

afterAll(async () => {
  await hosted?.close();
  await browser?.close();
  rmSync(browsersDir, { recursive: true, force: true });
});

describe('CDP proxy with Chromium', () => {
  it('serves Playwright connectOverCDP: open a page and evaluate; counts traffic', async () => {
    const before = { ...hosted.usage };
    const pw = await chromium.connectOverCDP(cdpUrl);
    const page = await pw.contexts()[0]!.newPage();
    await page.goto('data:text/html,<title>hello</title>');
    expect(await page.title()).toBe('hello');
    expect(await page.evaluate(() => [innerWidth, 6 * 7])).toEqual([1280, 42]);
    await page.close();
    await pw.close();
    expect(hosted.usage.activity).toBeGreaterThan(before.activity);
    expect(hosted.usage.bytes).toBeGreaterThan(before.bytes);
  });

  it('serves Playwright given the http URL, through the rewritten json/version document', async () => {
    const doc = await versionDocument(browser.wsEndpoint, cdpUrl);
    expect(doc.webSocketDebuggerUrl).toBe(cdpUrl);
    expect(String(doc.Browser)).toMatch(/Chrome\/\d+/);
    const pw = await chromium.connectOverCDP(cdpUrl.replace('ws://', 'http://'));
    const page = await pw.contexts()[0]!.newPage();
    expect(await page.evaluate(() => 1 + 1)).toBe(2);
    await page.close();
    await pw.close();
  });

  it('serves puppeteer-core connect({browserWSEndpoint}), and the paths clients append', async () => {
    const pp = await puppeteer.connect({ browserWSEndpoint: cdpUrl, defaultViewport: null });
    const page = await pp.newPage();
    expect(await page.evaluate(() => navigator.userAgent)).toMatch(/Chrome/);
    const targetId = (page.target() as any)._targetId as string;
    await pp.disconnect();

    // /devtools/browser/<guid> reaches the browser, /devtools/page/<id> that page.
    const asBrowser = await openRaw(`${hosted.base}/v1/cdp/s1/devtools/browser/anything?token=good-token`);
    const reply = nextMessage(asBrowser);
    asBrowser.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' }));
    expect(JSON.parse((await reply).data.toString()).result.product).toMatch(/Chrome/);
    asBrowser.close();
    const asPage = await openRaw(`${hosted.base}/v1/cdp/s1/devtools/page/${targetId}?token=good-token`);
    const evaluated = nextMessage(asPage);
    asPage.send(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression: '40 + 2' } }));
    expect(JSON.parse((await evaluated).data.toString()).result.result.value).toBe(42);
    asPage.close();
  });

  it('serves two clients at once', async () => {
    const [pw, pp] = await Promise.all([chromium.connectOverCDP(cdpUrl), puppeteer.connect({ browserWSEndpoint: cdpUrl })]);
    await eventually(() => hosted.proxy.connectionCount('s1') === 2, 5_000, 'two connections');
    const [a, b] = await Promise.all([pw.contexts()[0]!.newPage(), pp.newPage()]);
    const [ra, rb] = await Promise.all([a.evaluate(() => 'playwright'), b.evaluate(() => 'puppeteer')]);
    expect([ra, rb]).toEqual(['playwright', 'puppeteer']);
    await Promise.all([a.close(), b.close()]);
    await Promise.all([pw.close(), pp.disconnect()]);
    await eventually(() => hosted.proxy.connectionCount('s1') === 0, 5_000, 'connections to close');
  });

  it('lets a client disconnect and reconnect to the same browser state', async () => {
    let pw = await chromium.connectOverCDP(cdpUrl);
    const page = await pw.contexts()[0]!.newPage();
    await page.goto('data:text/html,<title>kept across connections</title>');
    await pw.close();
    await eventually(() => hosted.proxy.connectionCount('s1') === 0, 5_000, 'the disconnect');

    pw = await chromium.connectOverCDP(cdpUrl);
    const pages = pw.contexts()[0]!.pages();
    const titles = await Promise.all(pages.map((p) => p.title()));
    expect(titles).toContain('kept across connections');
    const kept = pages[titles.indexOf('kept across connections')]!;
    expect(await kept.evaluate(() => document.title)).toBe('kept across connections');
    await kept.close();
    await pw.close();
  });

  it('refuses a wrong or missing token with 401 and an unknown session with 404, before upgrading', async () => {
    expect(await upgradeStatus(`${hosted.base}/v1/cdp/s1?token=wrong`)).toBe(401);
    const calls = hosted.resolveCalls.length;
    expect(await upgradeStatus(`${hosted.base}/v1/cdp/s1`)).toBe(401);
    expect(hosted.resolveCalls.length).toBe(calls); // no lookup without a token
    expect(await upgradeStatus(`${hosted.base}/v1/cdp/nope?token=good-token`)).toBe(404);
    expect(await upgradeStatus(`${hosted.base}/v1/cdp/s1/elsewhere?token=good-token`)).toBe(404);
    // Not a CDP path: handleUpgrade declines it and the server does what it wants.
    expect(await upgradeStatus(`${hosted.base}/v1/other?token=good-token`)).toBe('error');
    await expect(chromium.connectOverCDP(`${hosted.base}/v1/cdp/s1?token=wrong`, { timeout: 10_000 })).rejects.toThrow(/401/);
  });

  it('closeSession disconnects every client of the session, and the browser lives on', async () => {
    const pw = await chromium.connectOverCDP(cdpUrl);
    const pp = await puppeteer.connect({ browserWSEndpoint: cdpUrl });
    const pwGone = new Promise<void>((r) => pw.once('disconnected', () => r()));
    const ppGone = new Promise<void>((r) => pp.once('disconnected', () => r()));
    await eventually(() => hosted.proxy.connectionCount('s1') === 2, 5_000, 'two connections');
    hosted.proxy.closeSession('s1');
    await Promise.all([pwGone, ppGone]);
    expect(hosted.proxy.connectionCount('s1')).toBe(0);

    const again = await chromium.connectOverCDP(cdpUrl);
    expect(again.isConnected()).toBe(true);
    await again.close();
  });
});

describe('CDP proxy frames', () => {
  let upstream: Server;
  let upstreamUrl: string;
  const upstreamCloses: number[] = [];
  let frames: Hosted;

  beforeAll(async () => {
    // An upstream that takes 300 ms to accept (what the proxy must buffer across), echoes
    // frames as they came, and closes with 4001 when asked to.
    const wss = new WebSocketServer({ noServer: true });
    upstream = createServer();
    upstream.on('upgrade', (req, socket, head) => {
      setTimeout(() => {
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.on('message', (data, binary) => {
            if (!binary && data.toString() === 'close-me') ws.close(4001, 'asked to');
            else ws.send(data, { binary });
          });
          ws.on('close', (code) => upstreamCloses.push(code));
        });
      }, 300);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    upstreamUrl = `ws://127.0.0.1:${(upstream.address() as AddressInfo).port}/devtools/browser/echo`;
    frames = await host({
      echo: { token: 't', wsEndpoint: upstreamUrl },
      dead: { token: 't', wsEndpoint: 'ws://127.0.0.1:1/devtools/browser/none' },
    });
  });

  afterAll(async () => {
    await frames?.close();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
  });

  it('buffers what the client sends before the upstream is open, in order, and keeps text and binary apart', async () => {
    const ws = await openRaw(`${frames.base}/v1/cdp/echo?token=t`);
    const received: { data: Buffer; binary: boolean }[] = [];
    ws.on('message', (data, binary) => received.push({ data: data as Buffer, binary }));
    // Sent at once: the upstream accepts only 300 ms later.
    ws.send('first');
    ws.send(Buffer.from([0, 1, 2, 255]), { binary: true });
    ws.send('third');
    await eventually(() => received.length === 3, 5_000, 'three echoes');
    expect(received.map((m) => m.binary)).toEqual([false, true, false]);
    expect(received[0]!.data.toString()).toBe('first');
    expect([...received[1]!.data]).toEqual([0, 1, 2, 255]);
    expect(received[2]!.data.toString()).toBe('third');
    expect(frames.usage.bytes).toBe(2 * (5 + 4 + 5));
    expect(frames.usage.activity).toBe(6);

    // The upstream's close reaches the client with its code.
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.send('close-me');
    expect(await closed).toBe(4001);
  });

  it('closes the upstream when the client leaves', async () => {
    const ws = await openRaw(`${frames.base}/v1/cdp/echo?token=t`);
    const echoed = nextMessage(ws);
    ws.send('ping');
    await echoed;
    const before = upstreamCloses.length;
    ws.close(4002, 'done');
    await eventually(() => upstreamCloses.length === before + 1, 5_000, 'the upstream close');
    expect(upstreamCloses.at(-1)).toBe(4002);
  });

  it('closes the client with 1011 when the browser cannot be reached', async () => {
    const ws = await openRaw(`${frames.base}/v1/cdp/dead?token=t`);
    const code = await new Promise<number>((r) => ws.once('close', (c) => r(c)));
    expect(code).toBe(1011);
  });

  it('refuses upgrades with 503 after close()', async () => {
    const other = await host({ echo: { token: 't', wsEndpoint: upstreamUrl } });
    other.proxy.close();
    expect(await upgradeStatus(`${other.base}/v1/cdp/echo?token=t`)).toBe(503);
    await other.close();
  });
});

describe('parseCdpPath', () => {
  it('reads the session, the page and the token', () => {
    expect(parseCdpPath('/v1/cdp/abc?token=T')).toEqual({ sessionId: 'abc', credential: { token: 'T' } });
    expect(parseCdpPath('/v1/cdp/abc/?token=T')).toEqual({ sessionId: 'abc', credential: { token: 'T' } });
    expect(parseCdpPath('/v1/cdp/abc/devtools/browser/9f?token=T')).toEqual({ sessionId: 'abc', credential: { token: 'T' } });
    expect(parseCdpPath('/v1/cdp/abc/devtools/page/P1?token=T')).toEqual({ sessionId: 'abc', page: 'P1', credential: { token: 'T' } });
    expect(parseCdpPath('/v1/cdp/abc')).toEqual({ sessionId: 'abc', credential: null });
    expect(parseCdpPath('/v1/cdp/abc/json/version')).toEqual({ sessionId: '', credential: null });
    expect(parseCdpPath('/v1/sessions')).toBeUndefined();
  });

  it("reads the hosted vendor SDK's form: an API key and a session on the root", () => {
    expect(parseCdpPath('/?apiKey=K&sessionId=abc')).toEqual({ sessionId: 'abc', credential: { apiKey: 'K' } });
    expect(parseCdpPath('/?sessionId=abc&apiKey=K')).toEqual({ sessionId: 'abc', credential: { apiKey: 'K' } });
    // Either alone is not a CDP address, nor is the key on any other path.
    expect(parseCdpPath('/?apiKey=K')).toBeUndefined();
    expect(parseCdpPath('/?sessionId=abc')).toBeUndefined();
    expect(parseCdpPath('/v1/sessions?apiKey=K&sessionId=abc')).toBeUndefined();
  });
});
