// bench/cdp-proxy: what a CDP message pays for going through the CDP proxy. One round trip
// of a cheap command (Browser.getVersion at the browser; Runtime.evaluate 1+1 in its page),
// p50 and p99, over a session's `cdp_url` (the server, its own process, as deployed)
// against the same browser's own DevTools endpoint, in the same run, the sides taking
// turns block by block. Then the proxy's part apart, in this process: the proxy alone
// (nothing looked at) against the proxy with the session's per-message work (its metering
// of activity, steps and screenshots; the checks of local files and download folders).
// Goal (issue 46): through cdp_url ≤ 1.1x direct at p50.
// Usage: pnpm exec tsx bench/cdp-proxy.ts [--n 2000] [--no-server]
//   --no-server: the in-process part only, on a headless browser launched here (no server
//   process to start: quick on a loaded machine).
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { createCdpProxy, DEFAULT_LAUNCH_OPTIONS, downloadsDirOf, launchBrowser, rootPaths, type CdpTarget } from '../server/browser/index.js';
import { silentLog } from '../server/browser/log.js';
import { meter } from '../server/sessions/cdp-access.js';
import { machine, percentile } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--n') + 1]) || 2000;
const BLOCK = 100;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

/** A CDP connection that times one command's round trip. */
async function connect(url: string): Promise<{ send(method: string, params?: object, sessionId?: string): Promise<any>; close(): void }> {
  const ws = new WebSocket(url, { perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let next = 1;
  const waiting = new Map<number, (m: any) => void>();
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString()) as { id?: number };
    if (m.id !== undefined) waiting.get(m.id)?.(m);
    if (m.id !== undefined) waiting.delete(m.id);
  });
  return {
    send: (method, params = {}, sessionId) =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
      }),
    close: () => ws.close(),
  };
}

type Conn = Awaited<ReturnType<typeof connect>>;

/** The command's round trips on each side, the sides taking turns every BLOCK. */
async function timeSides(sides: Record<string, { conn: Conn; sessionId?: string }>, method: string, params: object): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
  for (const { conn, sessionId } of Object.values(sides)) for (let i = 0; i < 50; i++) await conn.send(method, params, sessionId); // warm-up
  for (let done = 0; done < N; done += BLOCK) {
    for (const [name, { conn, sessionId }] of Object.entries(sides)) {
      for (let i = 0; i < BLOCK; i++) {
        const t = performance.now();
        await conn.send(method, params, sessionId);
        out[name]!.push((performance.now() - t) * 1000);
      }
    }
  }
  return out;
}

function report(title: string, times: Record<string, number[]>, base: string): void {
  const b50 = percentile(times[base]!, 50);
  console.log(`${title}:`);
  for (const [name, t] of Object.entries(times)) {
    const [p50, p99] = [percentile(t, 50), percentile(t, 99)];
    console.log(`  ${name.padEnd(22)} p50 ${p50.toFixed(0).padStart(5)} µs  p99 ${p99.toFixed(0).padStart(6)} µs  p50 ${(p50 / b50).toFixed(2)}x ${base}`);
  }
}

/** A page session on a connection (flattened), for Runtime.evaluate. */
async function pageSession(conn: Conn): Promise<string> {
  const { result } = await conn.send('Target.getTargets');
  const page = (result.targetInfos as { type: string; targetId: string }[]).find((t) => t.type === 'page')!;
  return (await conn.send('Target.attachToTarget', { targetId: page.targetId, flatten: true })).result.sessionId as string;
}

console.log(`bench/cdp-proxy on ${machine()}; ${N} round trips a side; load average ${load()}`);
const noServer = process.argv.includes('--no-server');
const server = noServer ? undefined : await startServerProcess({ SESSION_CREATE_RATE_PER_MINUTE: '100000', BROWSER_POOL_SIZE: '0' });
const own = noServer
  ? await launchBrowser(
      { ...DEFAULT_LAUNCH_OPTIONS, headless: true, adblock: false },
      { chromiumPath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', rootDir: join(tmpdir(), `cb-bench-cdp-${process.pid}`), log: silentLog },
    )
  : undefined;
try {
  let s: { id: string; cdp_url: string } | undefined;
  let root: string;
  if (server) {
    const res = await server.request('/v1/sessions', {
      method: 'POST',
      body: JSON.stringify({ browser: { headless: { active: true } }, session: { recording: { active: false } } }),
    });
    const created = ((await res.json()) as { data: { id: string; cdp_url: string } }).data;
    s = created;
    // The browser's own endpoint, from its root (owner.json names the session).
    root = readdirSync(server.browsersDir)
      .map((d) => join(server.browsersDir, d))
      .find((d) => {
        try {
          return JSON.parse(readFileSync(join(d, 'owner.json'), 'utf8')).sessionId === created.id;
        } catch {
          return false;
        }
      })!;
  } else root = own!.rootDir;
  const [port, path] = readFileSync(join(root, 'user-data', 'DevToolsActivePort'), 'utf8')
    .trim()
    .split('\n');
  const direct = `ws://127.0.0.1:${port}${path}`;

  // The proxy in this process, in front of the same browser: bare, and with the session's work.
  const counted = { lastActivity: 0, steps: 0, screenshots: 0, closeRequested: false };
  const targets: Record<string, CdpTarget> = {
    bare: { wsEndpoint: direct, onMessage: () => {} },
    metered: {
      wsEndpoint: direct,
      downloadsDir: downloadsDirOf(root),
      uploadsDir: rootPaths(root).uploads,
      onMessage: (from, data) => meter(counted, from, data),
    },
  };
  const proxy = createCdpProxy({ log: silentLog, resolve: async (id) => targets[id] ?? 'not_found' });
  const http = createServer();
  http.on('upgrade', (req, socket, head) => proxy.handleUpgrade(req, socket, head) || socket.destroy());
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const local = `ws://127.0.0.1:${(http.address() as AddressInfo).port}/v1/cdp`;

  const conns: Record<string, Conn> = {
    direct: await connect(direct),
    ...(s ? { 'cdp_url (server)': await connect(s.cdp_url) } : {}),
    'proxy here, bare': await connect(`${local}/bare?token=x`),
    'proxy here, metered': await connect(`${local}/metered?token=x`),
  };
  const loadAtStart = load();
  const version = await timeSides(Object.fromEntries(Object.entries(conns).map(([k, conn]) => [k, { conn }])), 'Browser.getVersion', {});
  const sessions = Object.fromEntries(
    await Promise.all(Object.entries(conns).map(async ([k, conn]) => [k, { conn, sessionId: await pageSession(conn) }] as const)),
  );
  const evaluate = await timeSides(sessions, 'Runtime.evaluate', { expression: '1+1', returnByValue: true });
  console.log(`load average ${loadAtStart} at the start, ${load()} at the end`);
  report('Browser.getVersion', version, 'direct');
  report('Runtime.evaluate 1+1', evaluate, 'direct');
  console.log(`(the in-process proxies share this process's event loop with the client: compare them with each other; the server's is the goal's figure)`);
  for (const c of Object.values(conns)) c.close();
  proxy.close();
  http.close();
} finally {
  await server?.stop();
  await own?.close();
}
