// bench/cluster: what running as a cluster costs, through a round-robin front (no
// stickiness, so most CDP connections land on a node that does not own the browser and are
// forwarded), against one node behind the same front and against raw Playwright, in one run.
//   1. create → connectOverCDP → goto a local page → end, p50 and p95, on 2 and 3 nodes
//      against 1 node (taking turns round by round); the goal is ≤ 10 % overhead at p50.
//   2. sessions created per second on 1, 2 and 3 nodes, 3 clients at once, the same total
//      browser cap (6) split over the nodes.
//   3. a CDP message's round trip (Browser.getVersion on the cdp_url's WebSocket) forwarded
//      through another node against straight to the owner; the goal is ≤ 1.2x.
// One 2-core box cannot show scaling across machines: every node here shares the same two
// cores and the same PostgreSQL, so sessions/s cannot grow with nodes; the design predicts
// near-linear growth across machines (nodes share only a few PostgreSQL queries per session,
// about 1 ms each), and a forwarding cost of one extra network hop per message plus one
// indexed lookup per connection.
// Needs DATABASE_URL (PostgreSQL). Usage: pnpm exec tsx bench/cluster.ts [--rounds 10] [--sessions 9] [--messages 300] [--cdp-only]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { chromium } from 'playwright-core';
import { WebSocket } from 'ws';
import { machine, ms, percentile, takingTurns } from './machine.js';
import { sessionLife } from './session-life.js';
import { startTestCluster, type TestCluster } from '../server/cluster/test-support.js';

const arg = (name: string, dflt: number) => Number(process.argv[process.argv.indexOf(`--${name}`) + 1]) || dflt;
const N = arg('rounds', 10);
const SESSIONS = arg('sessions', 9);
const MESSAGES = arg('messages', 300);
const TOTAL_CAP = 6;
const CLIENTS = 3;
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error('bench/cluster needs DATABASE_URL (PostgreSQL): several nodes share one database');
  process.exit(2);
}
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const BODY = { browser: { headless: { active: true } }, session: { recording: { active: false } } };

const page = createServer((_req, res) => {
  res.setHeader('content-type', 'text/html');
  res.end('<!doctype html><title>bench</title><h1>bench page</h1><script>document.body.append("ready")</script>');
});
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

async function cluster(count: number): Promise<TestCluster> {
  return startTestCluster({
    databaseUrl: databaseUrl!,
    count,
    env: { MAX_CONCURRENT_BROWSERS: String(TOTAL_CAP / count), SESSION_CREATE_RATE_PER_MINUTE: '100000', LOG_LEVEL: 'error' },
  });
}

/** One session's life through the front: create, connect, goto (timed by the caller), end. */
const ours = (c: TestCluster) =>
  sessionLife((path, init = {}) => fetch(`${c.front.url}${path}`, { ...init, headers: { 'service-api-key': c.apiKey, ...init.headers } }), BODY, pageUrl);

async function raw(): Promise<void> {
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--no-first-run'],
  });
  const p = await browser.newPage();
  await p.goto(pageUrl);
  await browser.close();
}

/** Sessions per second: `SESSIONS` sessions' lives by `CLIENTS` clients at once. */
async function throughput(c: TestCluster): Promise<number> {
  let left = SESSIONS;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (left-- > 0) await ours(c);
    }),
  );
  return SESSIONS / ((performance.now() - t) / 1000);
}

const line = (label: string, xs: number[]) => `${label} p50 ${ms(percentile(xs, 50))} p95 ${ms(percentile(xs, 95))}`;
/** Sub-millisecond figures (a CDP message on loopback) in microseconds. */
const fine = (label: string, xs: number[]) => `${label} p50 ${(percentile(xs, 50) * 1000).toFixed(0)} µs p95 ${(percentile(xs, 95) * 1000).toFixed(0)} µs`;

console.log(`bench/cluster on ${machine()}; load average at start ${load()}`);
console.log('One 2-core box cannot show scaling across machines: all nodes here share two cores and one PostgreSQL.');

// --cdp-only: the CDP round trip alone (a minute, rather than many).
if (process.argv.includes('--cdp-only')) {
  const c = await cluster(3);
  try {
    console.log(await cdpRoundTrip(c));
  } finally {
    await c.close();
    page.close();
  }
  process.exit(0);
}

const one = await cluster(1);
const results: string[] = [];
const rates: Record<number, number> = { 1: await throughput(one) };
for (const count of [2, 3]) {
  const many = await cluster(count);
  try {
    const turns = await takingTurns(N, { one: { run: () => ours(one) }, many: { run: () => ours(many) }, raw: { run: raw } });
    const overhead = percentile(turns.many, 50) / percentile(turns.one, 50) - 1;
    results.push(
      `create→connect→goto→end, ${count} nodes vs 1 (${N} rounds, taking turns; load ${load()}): ${line(`${count} nodes`, turns.many)} | ${line('1 node', turns.one)} | ${line('raw Playwright', turns.raw)} | ` +
        `overhead at p50 ${(overhead * 100).toFixed(1)} % (goal ≤ 10 %: ${overhead <= 0.1 ? 'met' : 'NOT met'}); 1 node / raw ${(percentile(turns.one, 50) / percentile(turns.raw, 50)).toFixed(2)}x`,
    );
    rates[count] = await throughput(many);
    if (count === 3) results.push(await cdpRoundTrip(many));
  } finally {
    await many.close();
  }
}
await one.close();
for (const r of results) console.log(r);
console.log(
  `sessions/s (${SESSIONS} sessions, ${CLIENTS} clients, total cap ${TOTAL_CAP}): ` +
    Object.entries(rates)
      .map(([n, r]) => `${n} node${n === '1' ? '' : 's'} ${r.toFixed(2)}`)
      .join(', ') +
    ` (load ${load()})`,
);
console.log(
  'Predicted across machines: sessions/s grows about linearly with nodes until PostgreSQL (a few queries a session) or the front saturates; per-session overhead stays one lookup and one hop.',
);
page.close();

/** Browser.getVersion round trips on a cdp_url's WebSocket: straight to the owner vs through another node, alternating. */
async function cdpRoundTrip(c: TestCluster): Promise<string> {
  const [a, b] = c.nodes;
  const res = await a.request('/v1/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(BODY) });
  const s = ((await res.json()) as { data: { id: string; cdp_url: string } }).data;
  const at = (n: typeof a) => s.cdp_url.replace(c.front.url.replace(/^http/, 'ws'), n.url.replace(/^http/, 'ws'));
  const open = (url: string) =>
    new Promise<WebSocket>((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
    });
  const direct = await open(at(a));
  const forwarded = await open(at(b));
  let id = 0;
  const once = (ws: WebSocket) =>
    new Promise<number>((resolve) => {
      const mine = ++id;
      const t = performance.now();
      const onMessage = (data: Buffer) => {
        if ((JSON.parse(data.toString()) as { id?: number }).id !== mine) return;
        ws.off('message', onMessage);
        resolve(performance.now() - t);
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ id: mine, method: 'Browser.getVersion' }));
    });
  const times = { direct: [] as number[], forwarded: [] as number[] };
  for (let i = 0; i < 20; i++) (await once(direct), await once(forwarded)); // warm-up
  for (let i = 0; i < MESSAGES; i++) {
    times.direct.push(await once(direct));
    times.forwarded.push(await once(forwarded));
  }
  direct.close();
  forwarded.close();
  // A session request (GET .../pages: the owner asks its browser) and a CDP connection
  // (upgrade to the first answer) through another node against straight to the owner: what
  // one forwarded request or connection costs, the unit of the per-session overhead.
  const http = { direct: [] as number[], forwarded: [] as number[] };
  const conn = { direct: [] as number[], forwarded: [] as number[] };
  const timed = async (fn: () => Promise<unknown>) => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };
  const pages = (n: typeof a) => n.request(`/v1/sessions/${s.id}/pages`).then((r) => r.arrayBuffer());
  const connectOnce = async (n: typeof a) => {
    const ws = await open(at(n));
    await once(ws);
    ws.close();
  };
  for (let i = 0; i < 5; i++) (await pages(a), await pages(b));
  for (let i = 0; i < 200; i++) {
    http.direct.push(await timed(() => pages(a)));
    http.forwarded.push(await timed(() => pages(b)));
  }
  for (let i = 0; i < 50; i++) {
    conn.direct.push(await timed(() => connectOnce(a)));
    conn.forwarded.push(await timed(() => connectOnce(b)));
  }
  await a.request(`/v1/sessions/${s.id}`, { method: 'DELETE' });
  const ratio = percentile(times.forwarded, 50) / percentile(times.direct, 50);
  return (
    `CDP round trip (Browser.getVersion, ${MESSAGES} each, alternating; load ${load()}): ${fine('forwarded via another node', times.forwarded)} | ${fine('direct to the owner', times.direct)} | ` +
    `p50 ratio ${ratio.toFixed(2)}x (goal ≤ 1.2x: ${ratio <= 1.2 ? 'met' : 'NOT met'}), the hop p50 +${((percentile(times.forwarded, 50) - percentile(times.direct, 50)) * 1000).toFixed(0)} µs\n` +
    `GET /v1/sessions/{id}/pages (200 each): ${fine('forwarded', http.forwarded)} | ${fine('direct', http.direct)} | p50 +${((percentile(http.forwarded, 50) - percentile(http.direct, 50)) * 1000).toFixed(0)} µs\n` +
    `CDP connect to first answer (50 each): ${fine('forwarded', conn.forwarded)} | ${fine('direct', conn.direct)} | p50 +${((percentile(conn.forwarded, 50) - percentile(conn.direct, 50)) * 1000).toFixed(0)} µs`
  );
}
