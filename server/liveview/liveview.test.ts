// The live view in a real browser: a second Chromium opens a session's live_view_url, sees
// the session's screen change, clicks, types, pastes and switches tabs in it; read-only,
// one-time links and several viewers are enforced by the server. Then the screencast and
// viewer bookkeeping on their own, with a browser and no server around them.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import pino from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { createSession } from '../sessions/test-support.js';
import { BOX, PageProbe, startFixtureServer, untilPasses, type FixtureServer } from '../input/test-support.js';
import { launchBrowser, type RunningBrowser } from '../browser/index.js';
import { CdpClient, listPages, navigate } from '../browser/cdp-client.js';
import type { RunningSession } from '../capability/index.js';
import { Screencasts } from './screencast.js';
import { LiveView } from './live-view.js';

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const VIEWPORT = { width: 1024, height: 768 };

/** The WebSocket address a live-view page names. */
function wsOf(pageUrl: string, html: string): string {
  const m = /<meta name="live-view-websocket" content="([^"]+)">/.exec(html);
  if (!m) throw new Error('the page names no WebSocket');
  const url = new URL(m[1]!.replace(/&#38;/g, '&'), pageUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url.href;
}

/** A raw viewer: what it received, and a way to send input. */
interface RawViewer {
  ws: WebSocket;
  frames: { seq: number; w: number; h: number; ts: number; jpeg: Buffer }[];
  texts: any[];
  closed: Promise<{ code: number; reason: string }>;
  send(msg: object): void;
}

function connect(url: string): Promise<RawViewer> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const v: RawViewer = {
      ws,
      frames: [],
      texts: [],
      closed: new Promise((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() }))),
      send: (msg) => ws.send(JSON.stringify(msg)),
    };
    ws.on('message', (data, binary) => {
      const buf = data as Buffer;
      if (binary) {
        const n = buf.readUInt32BE(0);
        v.frames.push({ ...JSON.parse(buf.subarray(4, 4 + n).toString()), jpeg: buf.subarray(4 + n) });
      } else v.texts.push(JSON.parse(buf.toString()));
    });
    ws.once('open', () => resolve(v));
    ws.once('error', reject);
  });
}

/** The colour at the centre of the viewer's canvas. */
const centreColour = (viewer: Page) =>
  viewer.evaluate(() => {
    const c = document.getElementById('screen') as HTMLCanvasElement;
    const d = c.getContext('2d')!.getImageData(Math.floor(c.width / 2), Math.floor(c.height / 2), 1, 1).data;
    return [d[0], d[1], d[2]];
  });

const isColour = (rgb: number[], want: 'red' | 'blue' | 'green' | 'white') => {
  const [r, g, b] = rgb as [number, number, number];
  if (want === 'white') return r > 220 && g > 220 && b > 220;
  const hi = { red: r, green: g, blue: b }[want];
  return hi > 100 && [r, g, b].filter((v) => v < 80).length === 2;
};

describe('the live view through the server, in a second browser', () => {
  let server: TestServer;
  let fixtures: FixtureServer;
  let viewerBrowser: Browser;

  beforeAll(async () => {
    server = await startTestServer();
    fixtures = await startFixtureServer();
    viewerBrowser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--disable-gpu'] });
  });

  afterAll(async () => {
    await viewerBrowser?.close();
    await server?.close();
    await fixtures?.close();
  });

  const api = (id: string, path: string, body?: unknown) =>
    server.request(`/v1/sessions/${id}/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });

  it('shows the screen as it changes, and takes clicks, keys, paste, wheel and tab switches', async () => {
    const s = await createSession(server, { session: { initial_url: fixtures.url('/colour/red') }, browser: { viewport: VIEWPORT } });
    const probe = await PageProbe.connect(s.cdp_url);
    const viewer = await viewerBrowser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      const res = await viewer.goto(s.live_view_url);
      expect(res?.status()).toBe(200);
      expect(res?.headers()['content-security-policy']).toContain("default-src 'none'");
      await untilPasses(async () => expect(await viewer.evaluate(() => (window as any).__liveView.frames)).toBeGreaterThan(0));
      expect(await viewer.evaluate(() => (window as any).__liveView.status)).toBe('live');
      await untilPasses(async () => expect(isColour(await centreColour(viewer), 'red')).toBe(true));

      // The session navigates: the viewer sees it.
      expect((await api(s.id, 'goto', { url: fixtures.url('/colour/blue') })).status).toBe(200);
      await untilPasses(async () => expect(isColour(await centreColour(viewer), 'blue')).toBe(true));

      // A click in the viewer reaches the page, where it was made.
      expect((await api(s.id, 'goto', { url: fixtures.url('/input') })).status).toBe(200);
      await untilPasses(async () => expect(isColour(await centreColour(viewer), 'white')).toBe(true));
      await probe.events();
      const canvas = (await viewer.locator('#screen').boundingBox())!;
      const toViewer = (p: { x: number; y: number }) => ({
        x: canvas.x + ((p.x + 0.5) * canvas.width) / VIEWPORT.width,
        y: canvas.y + ((p.y + 0.5) * canvas.height) / VIEWPORT.height,
      });
      const target = { x: BOX.button.x + 30, y: BOX.button.y + 15 };
      const at = toViewer(target);
      await viewer.mouse.click(at.x, at.y);
      const clicks = await untilPasses(async () => {
        const got = (await probe.events()).filter((e) => e.type === 'click');
        expect(got).toHaveLength(1);
        return got;
      });
      expect(clicks[0]).toMatchObject({ target: 'button', trusted: true, button: 0 });
      expect(Math.abs(clicks[0]!.x - target.x)).toBeLessThanOrEqual(2);
      expect(Math.abs(clicks[0]!.y - target.y)).toBeLessThanOrEqual(2);

      // Keys typed in the viewer go to the focused element of the page; paste as text.
      const text = toViewer({ x: BOX.text.x + 20, y: BOX.text.y + 20 });
      await viewer.mouse.click(text.x, text.y);
      await viewer.keyboard.type('Typed here');
      await viewer.keyboard.press('Backspace');
      await untilPasses(async () => expect(await probe.eval<string>("document.getElementById('text').value", '/input')).toBe('Typed her'));
      await viewer.evaluate(() => {
        const dt = new DataTransfer();
        dt.setData('text/plain', ' + pasted');
        document.getElementById('keys')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      });
      await untilPasses(async () => expect(await probe.eval<string>("document.getElementById('text').value", '/input')).toBe('Typed her + pasted'));
      const keys = (await probe.events()).filter((e) => e.type === 'keydown');
      expect(keys.map((k) => k.key).join('')).toBe('Typed hereBackspace');
      expect(keys.every((k) => k.trusted)).toBe(true);

      // The wheel scrolls the page.
      await viewer.mouse.move(toViewer({ x: 600, y: 500 }).x, toViewer({ x: 600, y: 500 }).y);
      await viewer.mouse.wheel(0, 300);
      await untilPasses(async () => expect(await probe.eval<number>('scrollY', '/input')).toBeGreaterThan(0));

      // A new tab comes to the front: the viewer lists it and shows it; switching back works.
      await probe.send('Target.createTarget', { url: fixtures.url('/colour/green') });
      await untilPasses(async () => {
        const tabs = await viewer.evaluate(() => (window as any).__liveView.tabs as { url: string; active: boolean }[]);
        expect(tabs).toHaveLength(2);
        expect(tabs.find((t) => t.active)?.url).toContain('/colour/green');
      });
      await untilPasses(async () => expect(isColour(await centreColour(viewer), 'green')).toBe(true));
      await viewer.locator('#tabs button', { hasText: 'Input fixture' }).click();
      await untilPasses(async () => expect(await probe.eval<string>('document.visibilityState', '/input')).toBe('visible'));
      await untilPasses(async () => expect(isColour(await centreColour(viewer), 'white')).toBe(true));

      // The session ends: the viewer says so.
      expect((await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
      await untilPasses(async () => expect(await viewer.evaluate(() => (window as any).__liveView.status)).toBe('ended'));
      const again = await fetch(s.live_view_url);
      expect(again.status).toBe(404);
    } finally {
      probe.close();
      await viewer.close();
    }
  });

  it('drops the input of a read-only view at the server, and still streams', async () => {
    const s = await createSession(server, {
      session: { initial_url: fixtures.url('/input'), live_view: { read_only: true }, recording: { active: false } },
      browser: { viewport: VIEWPORT },
    });
    const probe = await PageProbe.connect(s.cdp_url);
    const viewer = await viewerBrowser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await viewer.goto(s.live_view_url);
      await untilPasses(async () => expect(await viewer.evaluate(() => (window as any).__liveView.frames)).toBeGreaterThan(0));
      expect(await viewer.evaluate(() => (window as any).__liveView.status)).toBe('viewonly');
      await probe.events();
      const canvas = (await viewer.locator('#screen').boundingBox())!;
      const x = canvas.x + ((BOX.button.x + 30) * canvas.width) / VIEWPORT.width;
      const y = canvas.y + ((BOX.button.y + 15) * canvas.height) / VIEWPORT.height;
      await viewer.mouse.click(x, y);
      await viewer.keyboard.type('nope');
      // The page does send it (the server decides), straight over the socket too.
      const raw = await connect(wsOf(s.live_view_url, await (await fetch(s.live_view_url)).text()));
      raw.send({ t: 'mouse', e: 'down', x: BOX.button.x + 30, y: BOX.button.y + 15, b: 'left', bs: 1, c: 1, m: 0 });
      raw.send({ t: 'mouse', e: 'up', x: BOX.button.x + 30, y: BOX.button.y + 15, b: 'left', bs: 0, c: 1, m: 0 });
      raw.send({ t: 'paste', text: 'nope' });
      await untilPasses(() => expect(raw.frames.length).toBeGreaterThan(0));
      expect(raw.texts.find((m) => m.type === 'hello')).toMatchObject({ readOnly: true });
      // Negative: no input reaches the page (the server drops it silently; no event to wait for).
      await new Promise((r) => setTimeout(r, 1_500));
      const got = (await probe.events()).filter((e) => e.type !== 'mousemove');
      expect(got).toEqual([]);
      raw.ws.close();
    } finally {
      probe.close();
      await viewer.close();
      await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' });
    }
  });

  it('opens a one-time link once; its viewer can reconnect; several viewers watch; a bad token is refused', async () => {
    const s = await createSession(server, {
      session: { initial_url: fixtures.url('/animate'), live_view: { one_time_url: true }, recording: { active: false } },
      browser: { headless: { active: true }, viewport: VIEWPORT },
    });
    try {
      const first = await fetch(s.live_view_url);
      expect(first.status).toBe(200);
      expect(first.headers.get('content-type')).toMatch(/^text\/html/);
      const ws = wsOf(s.live_view_url, await first.text());
      const second = await fetch(s.live_view_url);
      expect(second.status).toBe(401);
      expect(await second.text()).toContain('already used');
      // The token itself no longer opens a socket either.
      const byToken = await connect(s.live_view_url.replace(/^http/, 'ws').replace('?token=', '/ws?token='));
      expect((await byToken.closed).code).toBe(4401);

      // The page's ticket works, for several viewers at once and after a disconnect.
      const a = await connect(ws);
      const b = await connect(ws);
      await untilPasses(() => {
        expect(a.frames.length).toBeGreaterThan(2);
        expect(b.frames.length).toBeGreaterThan(2);
      });
      expect(a.frames[0]).toMatchObject({ w: VIEWPORT.width, h: VIEWPORT.height });
      expect(a.frames[0]!.jpeg.subarray(0, 2).toString('hex')).toBe('ffd8');
      a.ws.close();
      await a.closed;
      const seen = b.frames.length;
      await untilPasses(() => expect(b.frames.length).toBeGreaterThan(seen + 2));
      const again = await connect(ws);
      await untilPasses(() => expect(again.frames.length).toBeGreaterThan(0));

      // Wrong tokens and unknown sessions.
      expect((await fetch(s.live_view_url.replace(/token=.*/, 'token=wrong'))).status).toBe(401);
      expect((await fetch(`${server.url}/live/00000000-0000-4000-8000-000000000000?token=x`)).status).toBe(404);
      const wrongTicket = await connect(ws.replace(/ticket=.*/, 'ticket=wrong'));
      expect((await wrongTicket.closed).code).toBe(4401);

      // The end closes every viewer, with a word first.
      expect((await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
      for (const v of [b, again]) {
        expect((await v.closed).code).toBe(4410);
        expect(v.texts.at(-1)).toEqual({ type: 'ended' });
      }
    } finally {
      await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' });
    }
  });
});

describe('the screencast and its viewers, on their own', () => {
  let browser: RunningBrowser;
  let cdp: CdpClient;
  let session: RunningSession;
  let fixtures: FixtureServer;
  let http: Server;
  let base: string;
  const touches: string[] = [];
  const log = pino({ level: 'silent' });
  const screencasts = new Screencasts({ quality: 60, log });
  let liveView: LiveView;

  beforeAll(async () => {
    fixtures = await startFixtureServer();
    browser = await launchBrowser(
      {
        headless: true,
        viewport: { width: 640, height: 480 },
        fullscreen: false,
        disableWebSecurity: false,
        popupBlocker: true,
        pdfViewer: true,
        adblock: false,
        extraStealth: false,
      },
      { chromiumPath, rootDir: join(tmpdir(), `cb-liveview-test-${randomBytes(4).toString('hex')}`), log },
    );
    cdp = await CdpClient.connect(browser.wsEndpoint);
    const [page] = await listPages(cdp);
    await navigate(cdp, page!.targetId, fixtures.url('/animate'));
    session = {
      id: '5e55a0f0-0000-4000-8000-000000000001',
      projectId: 'p',
      options: { liveView: { readOnly: false, oneTimeUrl: false }, recording: false } as RunningSession['options'],
      browser,
      cdp,
      liveViewToken: 'the-token',
      createdAt: Date.now(),
      askedAt: Date.now(),
    };
    liveView = new LiveView({
      sessions: { get: (id) => (id === session.id ? session : undefined), touch: (id, kind) => (touches.push(`${id}:${kind}`), true) },
      screencasts,
      log,
      maxViewers: 2,
    });
    const app = new Hono();
    liveView.routes(app);
    http = createServer(getRequestListener(app.fetch));
    http.on('upgrade', (req, socket, head) => {
      if (!liveView.handleUpgrade(req, socket, head)) socket.destroy();
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    http?.closeAllConnections();
    await new Promise((r) => http?.close(r));
    cdp?.close();
    await browser?.close();
    await fixtures?.close();
  });

  it('runs the screencast only while someone subscribes', async () => {
    const hub = screencasts.hub(session);
    expect(hub.active).toBe(false);
    const frames: number[] = [];
    const off = hub.subscribe((f) => frames.push(f.seq));
    await untilPasses(() => expect(frames.length).toBeGreaterThan(3));
    expect(hub.active).toBe(true);
    off();
    await untilPasses(() => expect(hub.active).toBe(false));
    const stopped = frames.length;
    // Negative: no frame comes once nobody subscribes (nothing announces a frame not made).
    await new Promise((r) => setTimeout(r, 700));
    // The page keeps animating, but no frame is made for nobody.
    expect(frames.length).toBe(stopped);
  });

  it('frees a viewer that leaves, lets it come back, limits viewers, and counts viewing as activity', async () => {
    const hub = screencasts.hub(session);
    const page = await fetch(`${base}/live/${session.id}?token=the-token`);
    expect(page.status).toBe(200);
    const ws = wsOf(`${base}/live/${session.id}`, await page.text());
    const v = await connect(ws);
    await untilPasses(() => expect(v.frames.length).toBeGreaterThan(0));
    expect(liveView.viewerCount(session.id)).toBe(1);
    expect(hub.subscribers).toBe(1);
    expect(touches).toContain(`${session.id}:liveview`);
    v.send({ t: 'ping', id: 7 });
    await untilPasses(() => expect(v.texts).toContainEqual({ type: 'pong', id: 7 }));

    v.ws.close();
    await v.closed;
    await untilPasses(() => expect(liveView.viewerCount(session.id)).toBe(0));
    expect(hub.subscribers).toBe(0);
    await untilPasses(() => expect(hub.active).toBe(false));

    const back = await connect(ws);
    const other = await connect(ws);
    await untilPasses(() => expect(back.frames.length + other.frames.length).toBeGreaterThan(2));
    const third = await connect(ws);
    expect((await third.closed).code).toBe(4429);

    await liveView.ending(session);
    expect((await back.closed).code).toBe(4410);
    expect((await other.closed).code).toBe(4410);
    expect(liveView.viewerCount()).toBe(0);
    await untilPasses(() => expect(hub.subscribers).toBe(0));
  });
});
