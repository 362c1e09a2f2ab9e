// For the input and live-view tests: a fixture page that records every input event it
// receives (position, button, key, modifiers, isTrusted), a server for it, and a small CDP
// helper that reads the page of a session through its cdp_url.
import { createServer } from 'node:http';
import { inflateSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { CdpClient, listPages } from '../browser/cdp-client.js';

export interface RecordedEvent {
  type: string;
  x: number;
  y: number;
  screenX: number;
  screenY: number;
  button: number;
  buttons: number;
  detail: number;
  key?: string;
  code?: string;
  ctrl: boolean;
  shift: boolean;
  alt: boolean;
  meta: boolean;
  deltaX?: number;
  deltaY?: number;
  trusted: boolean;
  target: string;
  text?: string;
}

/** Element boxes (CSS px of the page): where to point. */
export const BOX = {
  text: { x: 20, y: 20, w: 400, h: 80 },
  sel: { x: 20, y: 130, w: 300, h: 24 },
  drag: { x: 20, y: 200, w: 80, h: 80 },
  drop: { x: 300, y: 200, w: 150, h: 150 },
  button: { x: 500, y: 20, w: 120, h: 40 },
} as const;

const style = Object.entries(BOX)
  .map(([id, b]) => `#${id}{position:absolute;left:${b.x}px;top:${b.y}px;width:${b.w}px;height:${b.h}px;margin:0;box-sizing:border-box}`)
  .join('');

export const FIXTURE_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>Input fixture</title>
<style>body{margin:0;height:4000px;width:3000px;font:16px sans-serif;background:#fff}${style}#drag{background:#c33}#drop{background:#3c3}#sel{white-space:nowrap}</style></head>
<body>
<textarea id="text"></textarea>
<p id="sel">Selectable paragraph</p>
<div id="drag" draggable="true"></div>
<div id="drop"></div>
<button id="button">Button</button>
<script>
window.events = [];
const rec = (e) => events.push({
  type: e.type, x: e.clientX, y: e.clientY, screenX: e.screenX, screenY: e.screenY, button: e.button, buttons: e.buttons,
  detail: e.detail, key: e.key, code: e.code, ctrl: e.ctrlKey, shift: e.shiftKey, alt: e.altKey, meta: e.metaKey,
  deltaX: e.deltaX, deltaY: e.deltaY, trusted: e.isTrusted, target: (e.target && e.target.id) || (e.target && e.target.nodeName) || '',
  text: e.clipboardData ? e.clipboardData.getData('text/plain') : undefined,
});
for (const t of ['mousedown', 'mouseup', 'click', 'dblclick', 'contextmenu', 'mousemove', 'wheel', 'keydown', 'keyup', 'paste', 'copy', 'dragstart', 'drop', 'dragend']) addEventListener(t, rec, true);
const drop = document.getElementById('drop');
drop.addEventListener('dragover', (e) => e.preventDefault());
drop.addEventListener('drop', (e) => e.preventDefault());
document.getElementById('drag').addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'dragged'));
addEventListener('contextmenu', (e) => e.preventDefault());
</script>
</body></html>`;

/** The event-recording page, holding its main thread for 1.5 s before its first paint. */
export const SLOW_FIXTURE_HTML = FIXTURE_HTML.replace('</body>', '<script>for (const t = Date.now() + 1500; Date.now() < t; );</script></body>');

/** Pages in one colour, for telling frames apart. */
export const colourPage = (colour: string, title = colour) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body style="margin:0;background:${colour};height:100vh"></body></html>`;

export interface FixtureServer {
  url(path?: string): string;
  close(): Promise<void>;
}

const PAGES: Record<string, string> = {
  '/input': FIXTURE_HTML,
  '/slow-input': SLOW_FIXTURE_HTML,
  '/animate': `<!doctype html><title>animate</title><body style="margin:0"><canvas id=c width=400 height=300></canvas><script>const c=document.getElementById('c').getContext('2d');let n=0;(function f(){n++;c.fillStyle='hsl('+(n*7%360)+',80%,50%)';c.fillRect(0,0,400,300);c.fillStyle='#000';c.font='40px sans-serif';c.fillText(String(n),20,60);requestAnimationFrame(f)})()</script>`,
};

/** /input: the event-recording page (/slow-input: one slow to paint); /colour/NAME: a page in that colour; /animate: a page that changes every frame. */
export async function startFixtureServer(): Promise<FixtureServer> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const colour = /^\/colour\/([a-z]+)$/.exec(path)?.[1];
    const body = colour ? colourPage(colour) : PAGES[path];
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/input') => `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Reads and drives a session's pages over its cdp_url, as a client would. */
export class PageProbe {
  private constructor(private readonly cdp: CdpClient) {}

  static async connect(cdpUrl: string): Promise<PageProbe> {
    return new PageProbe(await CdpClient.connect(cdpUrl));
  }

  async pages() {
    return listPages(this.cdp);
  }

  /** Evaluates in a page (the first, or the one whose URL contains `urlPart`). */
  async eval<T = unknown>(expression: string, urlPart?: string): Promise<T> {
    const pages = await listPages(this.cdp);
    const page = urlPart ? pages.find((p) => p.url.includes(urlPart)) : pages[0];
    if (!page) throw new Error(`no page${urlPart ? ` with ${urlPart}` : ''}: ${pages.map((p) => p.url).join(', ')}`);
    const { sessionId } = await this.cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId: page.targetId, flatten: true });
    try {
      const r = await this.cdp.send<{ result: { value: T }; exceptionDetails?: unknown }>(
        'Runtime.evaluate',
        { expression, returnByValue: true, awaitPromise: true },
        sessionId,
      );
      if (r.exceptionDetails) throw new Error(`evaluation failed: ${JSON.stringify(r.exceptionDetails)}`);
      return r.result.value;
    } finally {
      await this.cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {});
    }
  }

  /** The fixture's recorded events since the last call. */
  events(urlPart = '/input'): Promise<RecordedEvent[]> {
    return this.eval<RecordedEvent[]>('window.events.splice(0)', urlPart);
  }

  send<T = any>(method: string, params: object = {}): Promise<T> {
    return this.cdp.send<T>(method, params);
  }

  close(): void {
    this.cdp.close();
  }
}

/**
 * Runs `fn` until it stops throwing (an assertion that is not true yet), up to timeoutMs;
 * answers its value. A boolean answer is refused: `untilPasses(() => x > 0)` would return at
 * once whatever x is, so the condition goes inside an assertion (`expect(x).toBeGreaterThan(0)`).
 * To poll a value until a predicate holds: `until(read, done)` (batches/test-support.ts), or
 * `eventually(fn)` (browser/test-support.ts), which polls until fn answers something truthy.
 */
export async function untilPasses<T>(fn: () => T | Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let value: T;
    try {
      value = await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
      continue;
    }
    if (typeof value === 'boolean') throw new Error('untilPasses: the function answered a boolean, which proves nothing; assert inside it');
    return value;
  }
}

/** Every event recorded about a session, oldest first. */
export async function eventsOf(db: { query<T>(sql: string, params?: readonly unknown[]): Promise<T[]> }, sessionId: string) {
  return db.query<{ id: string; type: string; data: any }>(`SELECT id, type, data FROM events WHERE data->>'session_id' = $1 ORDER BY seq`, [sessionId]);
}

/** An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are), decoded. */
export function decodePng(png: Uint8Array): { width: number; height: number; rgb(x: number, y: number): [number, number, number] } {
  const buf = Buffer.from(png);
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at < buf.length; ) {
    const len = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || interlace !== 0)
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      channels = colour === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? out[y * stride + i - channels]! : 0;
      const b = y > 0 ? out[(y - 1) * stride + i]! : 0;
      const c = i >= channels && y > 0 ? out[(y - 1) * stride + i - channels]! : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter]!;
      out[y * stride + i] = (line[i]! + predictor) & 0xff;
    }
  }
  return { width, height, rgb: (x, y) => [out[y * stride + x * channels]!, out[y * stride + x * channels + 1]!, out[y * stride + x * channels + 2]!] };
}

/** The bounding box of the pixels of exactly one colour, or undefined when there are none. */
export function findColour(img: ReturnType<typeof decodePng>, colour: [number, number, number]): { x: number; y: number; w: number; h: number } | undefined {
  let [minX, minY, maxX, maxY] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const [r, g, b] = img.rgb(x, y);
      if (r !== colour[0] || g !== colour[1] || b !== colour[2]) continue;
      minX = Math.min(minX, x);
      minY = Math.min(minY, y);
      maxX = Math.max(maxX, x);
      maxY = Math.max(maxY, y);
    }
  }
  return maxX < 0 ? undefined : { x: minX, y: minY, w: maxX - minX + 1, h: maxY - minY + 1 };
}
