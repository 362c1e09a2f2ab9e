import { WebSocket } from 'ws';
// Shared by the session tests (sessions, cdp, options, lifecycle, recovery): creating sessions over
// real HTTP, a local web server for pages, where a server's browser roots are, and checks
// that nothing of a browser is left (no process, no directory).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Db } from '../store/db.js';
import { readOwner, type OwnerRecord } from '../browser/owner.js';
import { leftovers } from '../browser/test-support.js';
import { listPids } from '../browser/procfs.js';

export { eventually, leftovers } from '../browser/test-support.js';

export interface Requester {
  request(path: string, init?: RequestInit): Promise<Response>;
}

export interface Created {
  id: string;
  cdp_url: string;
  live_view_url: string;
}

/** POST /v1/sessions; answers the status and the parsed body. */
export async function postSession(server: Requester, body: unknown = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const res = await server.request('/v1/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: kept as text for the assertion message
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Creates a session and fails loudly unless it answered 200. */
export async function createSession(server: Requester, body: unknown = {}): Promise<Created> {
  const res = await postSession(server, body);
  if (res.status !== 200) throw new Error(`POST /v1/sessions answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data as Created;
}

export async function endSession(server: Requester, id: string): Promise<Response> {
  return server.request(`/v1/sessions/${id}`, { method: 'DELETE' });
}

export async function getSession(server: Requester, id: string): Promise<{ status: number; body: any }> {
  const res = await server.request(`/v1/sessions/${id}`);
  return { status: res.status, body: await res.json() };
}

/**
 * A headless session without a recording: cheaper than the default (headful, recorded), for
 * tests where neither is the point. Spread it before `session` options of a test's own.
 */
export const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } } as const;

/** HEADLESS with session options of the test's own. */
export function headless(session: Record<string, unknown>) {
  return { browser: { headless: { active: true } }, session: { recording: { active: false }, ...session } };
}

export { browsersDirFor } from '../browser/roots.js';

export interface Root {
  dir: string;
  owner: OwnerRecord;
}

/** Every browser root (a directory with an owner.json) under a browsers directory. */
export function roots(browsersDir: string): Root[] {
  let names: string[];
  try {
    names = readdirSync(browsersDir);
  } catch {
    return [];
  }
  const out: Root[] = [];
  for (const name of names) {
    const owner = readOwner(join(browsersDir, name));
    if (owner) out.push({ dir: join(browsersDir, name), owner });
  }
  return out;
}

export function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The root serving a session (owner.json names it; pooled roots are adopted). */
export function rootOf(browsersDir: string, sessionId: string): Root {
  const found = roots(browsersDir).find((r) => r.owner.sessionId === sessionId);
  if (!found) throw new Error(`no browser root for session ${sessionId} in ${browsersDir}`);
  return found;
}

/** Nothing of the root is left: no process of it runs and its directory is gone. */
export function gone(root: Root): { processes: number[]; directory: boolean } {
  return { processes: leftovers(root.owner), directory: existsSync(root.dir) };
}

/** Chromium or Xvfb processes whose command line or environment names this browsers directory. */
export function processesUnder(browsersDir: string): number[] {
  const prefix = `${browsersDir}/`;
  return listPids().filter((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      if (cmd.includes(prefix)) return true;
      const env = readFileSync(`/proc/${pid}/environ`, 'latin1');
      return env.includes(`TMPDIR=${prefix}`);
    } catch {
      return false;
    }
  });
}

export interface EventRow {
  id: string;
  type: string;
  project_id: string;
  text: string;
  data: any;
  created: Date;
}

/** The events that end a session; other capabilities add their own (session.recording.ready). */
export const END_EVENTS = ['session.completed', 'session.failed'];

/** The session's events of the given types (default: the end events), oldest first. */
export async function sessionEvents(db: Db, sessionId: string, types: string[] = END_EVENTS): Promise<EventRow[]> {
  return db.query<EventRow>(`SELECT * FROM events WHERE data->>'session_id' = $1 AND type = ANY($2::text[]) ORDER BY created, id`, [sessionId, types]);
}

export async function sessionRow(db: Db, sessionId: string): Promise<Record<string, any> | undefined> {
  const [row] = await db.query('SELECT * FROM sessions WHERE id = $1', [sessionId]);
  return row;
}

/** A local web server for the pages sessions open. */
export interface PageServer {
  port: number;
  /** http://127.0.0.1:port/path (host: another name for the same server, another origin). */
  url(path?: string, host?: string): string;
  /** Requests received, as "METHOD path". */
  requests: string[];
  close(): Promise<void>;
}

const pages: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
  '/': (_req, res) => html(res, '<title>Home</title><h1 id="h">Hello from the test server</h1>'),
  '/second': (_req, res) => html(res, '<title>Second</title><p>second page</p>'),
  // Allocates memory until it is stopped (a session's memory cap, browser/cgroup.ts).
  '/hog': (_req, res) =>
    html(
      res,
      '<title>Hog</title><script>const kept = []; setInterval(() => { for (let i = 0; i < 8; i++) kept.push(new Float64Array(2 ** 17).fill(1)); }, 0);</script>',
    ),
  // Opens a popup while the page loads, without a user gesture: the popup blocker's
  // business. At once, not from a timer: a CDP client's evaluate (Playwright's waitForFunction
  // polls that way) counts as a user gesture and would let a later popup through.
  '/popup': (_req, res) =>
    html(
      res,
      `<title>Popup</title><script>
        let w = null;
        try { w = window.open('/second', '_blank'); } catch (e) {}
        window.popupResult = w ? 'opened' : 'blocked';
      </script>`,
    ),
  // Reads /data from the other origin (localhost vs 127.0.0.1); /data sends no CORS headers.
  '/cors': (req, res) => {
    const other = `http://localhost:${(req.socket.address() as AddressInfo).port}/data`;
    html(
      res,
      `<title>CORS</title><script>
        fetch(${JSON.stringify(other)}).then((r) => r.text()).then(
          (t) => { window.corsResult = 'read:' + t; },
          (e) => { window.corsResult = 'blocked'; });
      </script>`,
    );
  },
  // An article whose last paragraph arrives a second after the page has loaded.
  '/article': (_req, res) =>
    html(
      res,
      `<title>Article</title><h1>Title</h1><p>First <b>bold</b> paragraph with <a href="/second">a link</a>.</p>
      <script>window.addEventListener('load', () => setTimeout(() => { const p = document.createElement('p'); p.textContent = 'Late paragraph'; document.body.append(p); }, 1000));</script>`,
    ),
  // Asks each native dialog while it loads and keeps the answers.
  '/dialogs': (_req, res) =>
    html(res, `<title>Dialogs</title><script>window.dialogResults = [alert('a') ?? 'alerted', confirm('c'), prompt('p', 'default')];</script>`),
  // Asks for a popup window (size and position), as a login popup does.
  '/popup-window': (_req, res) =>
    html(
      res,
      `<title>Popup window</title><script>window.popupResult = window.open('/second', '_blank', 'popup,width=400,height=300,left=10,top=10') ? 'opened' : 'blocked';</script>`,
    ),
  // Signs in the way sites do, with the four kinds of state a profile must keep: a session
  // cookie (no expiry, HttpOnly), a persistent cookie, local storage and IndexedDB.
  // window.signedIn turns true once all four are written.
  '/login': (_req, res) => {
    res.setHeader('set-cookie', ['sid=session-cookie-value; Path=/; HttpOnly', 'remember=persistent-cookie-value; Path=/; Max-Age=86400']);
    html(
      res,
      `<title>Login</title><script>
        localStorage.setItem('user', 'test-buyer');
        const open = indexedDB.open('shop', 1);
        open.onupgradeneeded = () => open.result.createObjectStore('kv');
        open.onsuccess = () => {
          const tx = open.result.transaction('kv', 'readwrite');
          tx.objectStore('kv').put('cart-42', 'cart');
          tx.oncomplete = () => { window.signedIn = true; };
        };
      </script>`,
    );
  },
  // What the browser brings back: the cookies it sends (HttpOnly included), and, in
  // window.state once read, local storage and IndexedDB.
  '/account': (req, res) =>
    html(
      res,
      `<title>Account</title><pre id="cookies">${(req.headers.cookie ?? '').replace(/[<&]/g, '')}</pre><script>
        const read = new Promise((done) => {
          const open = indexedDB.open('shop', 1);
          open.onupgradeneeded = () => open.result.createObjectStore('kv');
          open.onsuccess = () => {
            const get = open.result.transaction('kv').objectStore('kv').get('cart');
            get.onsuccess = () => done(get.result ?? null);
            get.onerror = () => done(null);
          };
          open.onerror = () => done(null);
        });
        read.then((cart) => { window.state = { cookies: document.getElementById('cookies').textContent, user: localStorage.getItem('user'), cart }; });
      </script>`,
    ),
  // A form an agent fills in: a text box, a button, and the answer the button writes.
  '/form': (_req, res) =>
    html(
      res,
      `<title>Form</title><h1>Greeter</h1><label>Name <input id="name" type="text"></label>
      <button id="greet" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value + '!'">Greet</button>
      <p id="out" role="status"></p>`,
    ),
  '/doc.pdf': (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/pdf' });
    res.end(MINIMAL_PDF);
  },
  '/data': (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('secret-data');
  },
  '/size': (_req, res) =>
    // Read when asked, not at load: a headful window under load can report outerHeight 0
    // until it is mapped.
    html(
      res,
      '<title>Size</title><script>Object.defineProperty(window, "size", { get: () => ({ w: innerWidth, h: innerHeight, sw: screen.width, sh: screen.height, ow: outerWidth, oh: outerHeight }) });</script>',
    ),
};

/** One empty page. */
const MINIMAL_PDF = [
  '%PDF-1.4',
  '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
  '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj',
  '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >> endobj',
  'trailer << /Root 1 0 R >>',
  '%%EOF',
].join('\n');

function html(res: ServerResponse, body: string) {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html><head><meta charset="utf-8"></head><body>${body}</body></html>`);
}

export async function startPageServer(): Promise<PageServer> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push(`${req.method} ${path}`);
    const page = pages[path];
    if (page) return page(req, res);
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  // Not 127.0.0.1 only: the /cors page reaches the same server as localhost, which may be ::1.
  await new Promise<void>((resolve) => server.listen(0, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: (path = '/', host = '127.0.0.1') => `http://${host}:${port}${path}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Opens a WebSocket and answers how it went: 'open', or the HTTP status it was refused with. */
export function tryWebSocket(url: string, headers: Record<string, string> = {}): Promise<'open' | number | string> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => {
      ws.terminate();
      resolve('open');
    });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('error', (err) => resolve(err.message));
  });
}
