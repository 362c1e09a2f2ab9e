// bench/control-plane: how far one PostgreSQL carries the cluster. N real nodes of the
// service (most without browsers, MAX_CONCURRENT_BROWSERS=0: they heartbeat, route, forward,
// claim queued work and answer the API; BROWSER_NODES with browsers) on a PostgreSQL of the
// bench's own with pg_stat_statements, behind a round-robin front. For each N:
//   1. idle: the statements, transactions and database CPU of heartbeats alone, per node;
//   2. the cost of one unit of work in statements (calls), database time and CPU: a session's
//      life (create, connect over CDP, load a page, end) with and without recording; a CDP
//      connection and a live-view request on a node that does not own the session; a batch
//      item; a webhook delivery;
//   3. creations per second at 1, 2 and 4 clients (create then end, back to back), p50 and p99
//      of the creation, against raw Playwright's launch in the same run;
//   4. node death: a node with a running session killed (SIGKILL): how long until the cluster
//      marks it dead and fails its session (goal: NODE_DEAD_AFTER_SECONDS + 5 s);
//   5. connections held: per node and in all, against max_connections.
// The figures, and what they mean for an operator, are in docs/operations/scaling.md.
// Usage: pnpm exec tsx bench/control-plane.ts [--nodes 8,16,32] [--browser-nodes 2] [--sessions 10] [--idle 15]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { WebSocket } from 'ws';
import { machine, percentile } from './machine.js';
import { startClusterNode, startFront, type Front } from '../server/cluster/test-support.js';
import type { ChildServer } from '../server/testing/child-server.js';
import { freePort } from '../server/testing/free-port.js';
import { ownPostgresUnavailable, startOwnPostgres, type OwnPostgres } from '../server/testing/own-postgres.js';
import { listPids } from '../server/browser/procfs.js';
import { browsersDirFor } from '../server/browser/roots.js';

const arg = (name: string, dflt: string) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1]! : dflt);
const SIZES = arg('nodes', '8,16,32').split(',').map(Number);
const BROWSER_NODES = Number(arg('browser-nodes', '2'));
const SESSIONS = Number(arg('sessions', '10'));
const IDLE_SECONDS = Number(arg('idle', '15'));
const DEAD_AFTER = 10;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };
const RECORDED = { browser: { headless: { active: true } }, session: { recording: { active: true } } };

const unavailable = ownPostgresUnavailable();
if (unavailable) {
  console.error(`bench/control-plane needs a PostgreSQL of its own: ${unavailable}`);
  process.exit(2);
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
const page = createServer((_req, res) => {
  res.setHeader('content-type', 'text/html');
  res.end('<!doctype html><title>bench</title><h1>bench page</h1>');
});
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;

// A webhook receiver: every delivery counted, by event id (none may come twice), and by the
// process whose socket sent it (which node delivered it: the table keeps no trace of that).
const received = new Map<string, number>();
const senders: number[] = [];
const receiver = createServer((req, res) => {
  const id = String(req.headers['webhook-id'] ?? '');
  received.set(id, (received.get(id) ?? 0) + 1);
  senders.push(pidOfPeer(req.socket.remotePort!, (receiver.address() as AddressInfo).port) ?? 0);
  req.resume();
  req.on('end', () => res.writeHead(200).end());
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

/** The pid of the local process holding the TCP socket from `port` to our `to` port. */
function pidOfPeer(port: number, to: number): number | undefined {
  const hex = (p: number) => p.toString(16).toUpperCase().padStart(4, '0');
  let inode: string | undefined;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[1]?.endsWith(`:${hex(port)}`) && f[2]?.endsWith(`:${hex(to)}`)) inode = f[9];
    }
  }
  if (!inode) return undefined;
  for (const pid of listPids()) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return pid;
    } catch {
      // gone, or not ours to read
    }
  }
  return undefined;
}

/** CPU seconds of the PostgreSQL server's processes (the postmaster and its backends). */
function databaseCpu(own: OwnPostgres): number {
  const postmaster = Number(readFileSync(join(own.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let ticks = 0;
  for (const pid of listPids()) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (pid === postmaster || Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone
    }
  }
  return ticks / 100;
}

/** How many of each value, most first: "a×5 b×3". */
function spread(values: string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([v, k]) => `${v}×${k}`)
    .join(' ');
}

interface Usage {
  /** Seconds since reset. */
  seconds: number;
  calls: number;
  execMs: number;
  xacts: number;
  cpu: number;
  top: { query: string; calls: number }[];
}

class Meter {
  constructor(
    private readonly sql: pg.Client,
    private readonly own: OwnPostgres,
  ) {}
  private startXacts = 0;
  private startCpu = 0;
  private startedAt = 0;
  async reset(): Promise<void> {
    this.startedAt = performance.now();
    await this.sql.query('SELECT pg_stat_statements_reset()');
    await this.sql.query('SELECT pg_stat_reset()');
    this.startXacts = await this.xacts();
    this.startCpu = databaseCpu(this.own);
  }
  private async xacts(): Promise<number> {
    const r = await this.sql.query<{ n: string }>(`SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`);
    return Number(r.rows[0]!.n);
  }
  /** What ran since reset, the bench's own statements left out. */
  async read(): Promise<Usage> {
    const r = await this.sql.query<{ query: string; calls: string; ms: number }>(
      `SELECT query, calls, total_exec_time AS ms FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT ILIKE '%pg_stat%' ORDER BY calls DESC`,
    );
    const calls = r.rows.reduce((a, x) => a + Number(x.calls), 0);
    const execMs = r.rows.reduce((a, x) => a + x.ms, 0);
    return {
      seconds: (performance.now() - this.startedAt) / 1000,
      calls,
      execMs,
      // The bench's own reads of the statistics are 2-3 transactions.
      xacts: (await this.xacts()) - this.startXacts,
      cpu: databaseCpu(this.own) - this.startCpu,
      top: r.rows.slice(0, 6).map((x) => ({ query: x.query.replace(/\s+/g, ' ').slice(0, 90), calls: Number(x.calls) })),
    };
  }
}

interface Cluster {
  front: Front;
  nodes: (ChildServer & { id: string; dataDir: string })[];
  apiKey: string;
  close(): Promise<void>;
}

/** N nodes on `databaseUrl`: the first BROWSER_NODES with browsers, the rest without; started four at a time. */
async function startCluster(databaseUrl: string, n: number): Promise<Cluster> {
  const front = await startFront();
  const apiKey = `sk_bench_${randomBytes(16).toString('hex')}`;
  const secretsKey = randomBytes(32).toString('hex');
  const nodes: Cluster['nodes'] = [];
  const start = async (i: number) => {
    const id = `node-${i}`;
    const dataDir = mkdtempSync(join(tmpdir(), `cb-cp-${id}-`));
    const port = await freePort();
    const node = await startClusterNode({
      id,
      dataDir,
      apiKey,
      databaseUrl,
      port,
      publicUrl: front.url,
      secretsKey,
      env: { NODE_DEAD_AFTER_SECONDS: String(DEAD_AFTER), MAX_CONCURRENT_BROWSERS: i < BROWSER_NODES ? '6' : '0', CHROMIUM_PATH: chromiumPath },
    });
    nodes[i] = Object.assign(node, { id, dataDir });
  };
  const close = async () => {
    await front.close();
    await Promise.all(
      nodes.filter(Boolean).map(async (node) => {
        if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGTERM');
        await Promise.race([node.exited, new Promise((r) => setTimeout(r, 20_000))]);
        if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGKILL');
        // A node killed by the bench leaves its browsers: they go with it.
        for (const pid of browserPids(node.dataDir)) process.kill(pid, 'SIGKILL');
        rmSync(node.dataDir, { recursive: true, force: true });
      }),
    );
  };
  try {
    await start(0);
    for (let i = 1; i < n; i += 4) await Promise.all(Array.from({ length: Math.min(4, n - i) }, (_, k) => start(i + k)));
  } catch (err) {
    await close();
    throw err;
  }
  front.targets.push(...nodes.map((x) => x.url));
  return { front, nodes, apiKey, close };
}

function browserPids(dataDir: string): number[] {
  const prefix = `${browsersDirFor(dataDir)}/`;
  return listPids().filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(prefix);
    } catch {
      return false;
    }
  });
}

const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function request(c: Cluster, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(c.front.url + path, { ...init, headers: { 'service-api-key': c.apiKey, ...(init.headers as Record<string, string>) } });
}

interface Session {
  id: string;
  cdp_url: string;
  live_view_url: string;
}

async function create(c: Cluster, body: unknown): Promise<Session> {
  const r = await request(c, '/v1/sessions', json(body));
  if (r.status !== 200) throw new Error(`create answered ${r.status}: ${await r.text()}`);
  return ((await r.json()) as { data: Session }).data;
}

async function end(c: Cluster, id: string): Promise<void> {
  const r = await request(c, `/v1/sessions/${id}`, { method: 'DELETE' });
  await r.body?.cancel();
}

/** The node that owns a session, from the database. */
async function ownerOf(sql: pg.Client, id: string): Promise<string> {
  return (await sql.query<{ node_id: string }>('SELECT node_id FROM sessions WHERE id = $1', [id])).rows[0]!.node_id;
}

async function life(c: Cluster, body: unknown): Promise<void> {
  const s = await create(c, body);
  const browser = await chromium.connectOverCDP(s.cdp_url);
  const context = browser.contexts()[0] ?? (await browser.newContext());
  const p = context.pages()[0] ?? (await context.newPage());
  await p.goto(pageUrl);
  await browser.close();
  await end(c, s.id);
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** What the cluster does idle, a second (heartbeats, looks, polls): taken off a unit's figures. */
let background = { calls: 0, xacts: 0, execMs: 0, cpu: 0 };

/** A unit's cost: what ran while it ran, less the idle cluster's work over the same time, a unit. */
const per = (u: Usage, n: number) => {
  const less = (v: number, idle: number) => Math.max(0, v - idle * u.seconds) / n;
  return `${less(u.calls, background.calls).toFixed(1)} statements, ${less(u.xacts, background.xacts).toFixed(1)} transactions, ${less(u.execMs, background.execMs).toFixed(2)} ms executing, ${(less(u.cpu, background.cpu) * 1000).toFixed(1)} ms database CPU`;
};

async function rawLaunch(n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const b = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
    });
    out.push(performance.now() - t);
    await b.close();
  }
  return out;
}

console.log(`bench/control-plane on ${machine()}; ${BROWSER_NODES} nodes with browsers (6 each), the rest without; NODE_DEAD_AFTER_SECONDS=${DEAD_AFTER}`);
for (const n of SIZES) {
  const own = await startOwnPostgres({
    shared_preload_libraries: 'pg_stat_statements',
    max_connections: String(Math.max(100, n * 14 + 20)),
    'pg_stat_statements.track': 'all',
  });
  const sql = new pg.Client({ connectionString: own.url });
  await sql.connect();
  await sql.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const meter = new Meter(sql, own);
  const t0 = Date.now();
  let c: Cluster | undefined;
  try {
    c = await startCluster(own.url, n);
    console.log(`\n## ${n} nodes (started in ${((Date.now() - t0) / 1000).toFixed(0)} s; load ${load()})`);
    const hook = await request(c, '/v1/webhooks', json({ url: receiverUrl, subscribed_events: ['session.completed'] }));
    if (hook.status >= 300) console.log(`  (webhook not subscribed: ${hook.status} ${await hook.text()})`);

    // 1. Idle.
    await meter.reset();
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    const idle = await meter.read();
    console.log(
      `idle ${IDLE_SECONDS} s: ${(idle.calls / IDLE_SECONDS).toFixed(1)} statements/s, ${(idle.xacts / IDLE_SECONDS).toFixed(1)} transactions/s, database CPU ${((idle.cpu / IDLE_SECONDS) * 100).toFixed(1)} % of a core; per node ${(idle.calls / IDLE_SECONDS / n).toFixed(2)} statements/s`,
    );
    for (const t of idle.top.slice(0, 4)) console.log(`    ${t.calls} × ${t.query}`);
    background = { calls: idle.calls / idle.seconds, xacts: idle.xacts / idle.seconds, execMs: idle.execMs / idle.seconds, cpu: idle.cpu / idle.seconds };

    // 2. Units of work.
    await life(c, HEADLESS);
    const deliveredBefore = received.size;
    await meter.reset();
    for (let i = 0; i < SESSIONS; i++) await life(c, HEADLESS);
    await until('the webhooks', async () => (received.size - deliveredBefore >= SESSIONS ? true : undefined), 30_000).catch(() => undefined);
    const lifeUsage = await meter.read();
    console.log(`a session's life (create, CDP, a page, end; its webhook delivered): ${per(lifeUsage, SESSIONS)}`);
    await meter.reset();
    const recorded = Math.max(2, Math.floor(SESSIONS / 3));
    for (let i = 0; i < recorded; i++) await life(c, RECORDED);
    console.log(`the same, recorded: ${per(await meter.read(), recorded)}`);

    // A CDP connection and a live-view request on a node that does not own the session.
    const s = await create(c, HEADLESS);
    const owner = await ownerOf(sql, s.id);
    const other = c.nodes.find((x) => x.id !== owner)!;
    await meter.reset();
    for (let i = 0; i < SESSIONS; i++) {
      const u = new URL(s.cdp_url);
      u.host = new URL(other.url).host;
      const ws = new WebSocket(u);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      ws.send(JSON.stringify({ id: 1, method: 'Browser.getVersion' }));
      await new Promise((resolve) => ws.once('message', resolve));
      ws.close();
    }
    console.log(`a CDP connection on another node (its owner remembered after the first): ${per(await meter.read(), SESSIONS)}`);
    await meter.reset();
    for (let i = 0; i < SESSIONS; i++) {
      const u = new URL(s.live_view_url);
      const r = await fetch(other.url + u.pathname + u.search);
      await r.body?.cancel();
    }
    console.log(`a live-view request on another node: ${per(await meter.read(), SESSIONS)}`);
    await end(c, s.id);

    // A batch item.
    await meter.reset();
    const batch = await request(c, '/v1/batch-sessions', json({ count: SESSIONS, configuration: HEADLESS }));
    const batchId = ((await batch.json()) as { data: { batch_id: string } }).data?.batch_id;
    if (batchId) {
      await until(
        'the batch',
        async () => {
          const r = await request(c!, `/v1/batch-sessions/${batchId}`);
          const b = ((await r.json()) as { data: { status: string } }).data;
          return b.status !== 'pending' ? b : undefined;
        },
        120_000,
      ).catch(() => undefined);
      console.log(`a batch item (queued, claimed, its session started): ${per(await meter.read(), SESSIONS)}`);
      // Fair and exact: which node claimed each item, none without a session or with two.
      const items = await sql.query<{ claimed_by: string | null; status: string; session_id: string | null }>(
        'SELECT claimed_by, status, session_id FROM batch_items WHERE batch_id = $1',
        [batchId],
      );
      const sessionsOfItems = new Set(items.rows.map((r) => r.session_id).filter(Boolean));
      console.log(
        `  the batch's ${items.rows.length} items: ${spread(items.rows.map((r) => r.claimed_by ?? 'none'))}; statuses ${spread(items.rows.map((r) => r.status))}; ${sessionsOfItems.size} sessions for ${items.rows.filter((r) => r.session_id).length} items with one`,
      );
      await request(c, '/v1/sessions/all', { method: 'DELETE' });
    } else console.log(`(batch refused: ${batch.status})`);

    // Task runs: queued by any node, claimed by the nodes with browsers, each exactly once.
    const task = (await (await request(c, '/v1/task', json({ name: 'bench-cp', language: 'typescript' }))).json()) as { data: { id: string } };
    const script = 'export default async function run(ctx: any) { await ctx.page.goto(ctx.input.url); return 1; }';
    await request(c, `/v1/task/${task.data.id}/deploy`, json({ code: Buffer.from(script).toString('base64'), browserConfiguration: HEADLESS.session }));
    await meter.reset();
    const runs = await Promise.all(
      Array.from({ length: SESSIONS }, async () => {
        const r = await request(c!, `/v2/tasks/${task.data.id}/run`, json({ input_params: { url: pageUrl } }));
        return ((await r.json()) as { run_id?: string }).run_id;
      }),
    );
    const finished = await until(
      'the task runs',
      async () => {
        const r = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM task_executions WHERE task_id = $1 AND finished_at IS NOT NULL`, [task.data.id]);
        return Number(r.rows[0]!.n) >= SESSIONS ? true : undefined;
      },
      180_000,
    ).catch(() => false);
    console.log(
      `a task run (queued, claimed, its session, the script, ended): ${per(await meter.read(), SESSIONS)}${finished ? '' : ' (not all finished in 180 s)'}`,
    );
    const executions = await sql.query<{ claimed_by: string | null; status: string }>('SELECT claimed_by, status FROM task_executions WHERE task_id = $1', [
      task.data.id,
    ]);
    console.log(
      `  the ${runs.filter(Boolean).length} runs answered, ${executions.rows.length} executions: ${spread(executions.rows.map((r) => r.claimed_by ?? 'none'))}; statuses ${spread(executions.rows.map((r) => r.status))}`,
    );

    // 3. Creations per second.
    const raw = await rawLaunch(5);
    console.log(`raw Playwright chromium.launch() p50 ${percentile(raw, 50).toFixed(0)} ms`);
    for (const clients of [1, 2, 4]) {
      const times: number[] = [];
      const stopAt = Date.now() + 15_000;
      await meter.reset();
      await Promise.all(
        Array.from({ length: clients }, async () => {
          while (Date.now() < stopAt) {
            const t = performance.now();
            const made = await create(c!, HEADLESS).catch(() => undefined);
            if (!made) continue;
            times.push(performance.now() - t);
            await end(c!, made.id);
          }
        }),
      );
      const u = await meter.read();
      console.log(
        `${clients} client(s): ${(times.length / 15).toFixed(2)} creations/s, create p50 ${percentile(times, 50).toFixed(0)} ms p99 ${percentile(times, 99).toFixed(0)} ms (${(percentile(times, 50) / percentile(raw, 50)).toFixed(2)}x raw launch); database ${(u.calls / 15).toFixed(0)} statements/s, CPU ${((u.cpu / 15) * 100).toFixed(1)} % of a core; load ${load()}`,
      );
    }

    // 5. Connections held (before the death below takes one node's away).
    const conns = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM pg_stat_activity WHERE backend_type = 'client backend'`);
    const max = await sql.query<{ max_connections: string }>('SHOW max_connections');
    console.log(
      `connections held: ${conns.rows[0]!.n} in all (${(Number(conns.rows[0]!.n) / n).toFixed(1)} a node; the bench's own 1), max_connections ${max.rows[0]!.max_connections}`,
    );

    // 4. Node death: the second browser node, with a running session, killed.
    const victimIndex = BROWSER_NODES > 1 ? 1 : 0;
    const victim = c.nodes[victimIndex]!;
    const held = await fetch(`${victim.url}/v1/sessions`, { ...json(HEADLESS), headers: { 'service-api-key': c.apiKey, 'content-type': 'application/json' } });
    const heldId = ((await held.json()) as { data: Session }).data.id;
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    const failedAfter = await until(
      'the session to be failed',
      async () => {
        const r = await sql.query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [heldId]);
        return r.rows[0]!.status === 'failed' ? (Date.now() - killedAt) / 1000 : undefined;
      },
      (DEAD_AFTER + 30) * 1000,
    ).catch(() => NaN);
    const dead = await sql
      .query<{ dead: boolean; swept: boolean }>(`SELECT dead_at IS NOT NULL AS dead, swept_at IS NOT NULL AS swept FROM nodes WHERE id = $1`, [victim.id])
      .catch(() => undefined);
    console.log(
      `a node killed with a session: its session failed after ${failedAfter.toFixed(1)} s (goal ≤ ${DEAD_AFTER + 5} s); node row ${JSON.stringify(dead?.rows[0] ?? {})}`,
    );
    const twice = [...received.values()].filter((v) => v > 1).length;
    console.log(`webhook deliveries: ${received.size} events, ${twice} delivered twice`);
    const nodeOf = new Map(c.nodes.map((x) => [x.child.pid, x.id]));
    const by = senders.splice(0).map((pid) => nodeOf.get(pid) ?? 'unknown');
    console.log(`  by the node that delivered them: ${spread(by)} (${new Set(by).size} of ${n} nodes)`);
  } finally {
    await c?.close();
    await sql.end();
    await own.remove();
  }
}
page.close();
receiver.close();
