// bench/webhooks: webhook delivery (run with `pnpm bench webhooks`, or
// `node --import tsx <this file> [--events N] [--db memory|dir|postgres] [--runs bare,worker,backlog,bulk,paced,flaky]`):
//   1. bare:   a plain loop of HTTP POSTs of the same payload to the same loopback receiver,
//              as many in flight as the worker allows one webhook: the physical limit;
//   2. worker: N events emitted, each in its own transaction, delivered by the worker as
//              they commit (the emitter yields between events, as separate requests would);
//      backlog: N events queued first, then the worker started: its delivery capacity
//              (latency here is from the worker's start; goal ≥ 0.5x the bare loop);
//      bulk:   N events emitted 50 to a transaction with emitEvents (a batch of sessions
//              ending together), delivered as they commit;
//      paced:  events at half the rate of run 2, for latency without a queue;
//   3. flaky:  the same with the receiver failing 30 % of attempts (the retry schedule's
//              shape scaled down 10,000x, 0.5 ms to 3.6 s, so the run ends in seconds),
//              counting events lost (goal 0).
// Deliveries per second, the CPU time of this process per delivery (what the rates come to
// on an idle machine, and steadier than them on a loaded one; the `settled` polls add a
// little to the worker's), and p50/p99 from the event's commit (or the bare POST's send) to
// its first 2xx receipt, with the ratio of each to the bare loop of the same run. The
// receiver runs in its own process, as a real one would.
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDb, type Db } from '../server/store/db.js';
import { withSearchPath } from '../server/events/test-support.js';
import { migrate } from '../server/store/migrate.js';
import { DeliveryWorker } from '../server/events/deliver.js';
import { emitEvent, emitEvents } from '../server/outbox/emit.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from '../server/events/retry.js';
import { sampleEventData } from '../server/events/samples.js';
import { generateSecret, signatureHeaders } from '../server/events/signing.js';
import { sealSecret } from '../server/events/sealed-secrets.js';
import { sealer } from '../server/secrets/index.js';
import { createSignals } from '../server/capability/index.js';
import { machine } from './machine.js';

const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------- receiver process
if (process.argv.includes('--receiver')) {
  let failRate = 0;
  let firstOk = new Map<string, number>();
  let requests = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      requests++;
      const id = String(req.headers['webhook-id'] ?? '');
      if (Math.random() < failRate) {
        res.writeHead(500);
        res.end();
        return;
      }
      if (!firstOk.has(id)) firstOk.set(id, at);
      res.writeHead(204);
      res.end();
    });
  });
  server.keepAliveTimeout = 10_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', (m: { cmd: string; failRate?: number }) => {
    if (m.cmd === 'reset') {
      failRate = m.failRate ?? 0;
      firstOk = new Map();
      requests = 0;
      process.send!({ ok: true });
    } else if (m.cmd === 'count') {
      process.send!({ count: firstOk.size, requests });
    } else if (m.cmd === 'report') {
      process.send!({ receipts: [...firstOk], requests });
    } else if (m.cmd === 'exit') {
      server.close();
      process.exit(0);
    }
  });
}

// ---------------------------------------------------------------- driver
interface Figures {
  name: string;
  events: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  requests: number;
  lost: number;
  dead?: number;
  emitPerSecond?: number;
  /** CPU time of this process (driver, worker, PGlite) per delivery, in µs: steadier than rates on a loaded machine. */
  cpuPerDelivery?: number;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

class Receiver {
  private waiting: ((m: any) => void) | undefined;
  private constructor(
    private readonly proc: ChildProcess,
    readonly port: number,
  ) {
    proc.on('message', (m) => {
      const w = this.waiting;
      this.waiting = undefined;
      w?.(m);
    });
  }
  static async start(): Promise<Receiver> {
    const proc = fork(fileURLToPath(import.meta.url), ['--receiver'], { execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    const { port } = await new Promise<{ port: number }>((r) => proc.once('message', r as never));
    return new Receiver(proc, port);
  }
  ask<T>(msg: object): Promise<T> {
    return new Promise<T>((r) => {
      this.waiting = r;
      this.proc.send(msg);
    });
  }
  stop() {
    this.proc.send({ cmd: 'exit' });
  }
}

async function waitForAll(receiver: Receiver, n: number, timeoutMs: number, done?: () => Promise<boolean>) {
  const until = Date.now() + timeoutMs;
  let lastDone = Date.now();
  for (;;) {
    const { count } = await receiver.ask<{ count: number }>({ cmd: 'count' });
    if (count >= n) return;
    // `done` is a query on the worker's database (on PGlite, in the worker's thread): once a
    // second, not at every look, so the measuring does not slow what it measures.
    if (done && Date.now() - lastDone >= 1000) {
      lastDone = Date.now();
      if (await done()) return;
    }
    if (Date.now() > until) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function figures(name: string, receiver: Receiver, started: Map<string, number>, extra: Partial<Figures> = {}): Promise<Figures> {
  const { receipts, requests } = await receiver.ask<{ receipts: [string, number][]; requests: number }>({ cmd: 'report' });
  const lat: number[] = [];
  let first = Infinity;
  let last = 0;
  for (const t of started.values()) first = Math.min(first, t);
  for (const [id, at] of receipts) {
    const t0 = started.get(id);
    if (t0 === undefined) continue;
    lat.push(at - t0);
    last = Math.max(last, at);
  }
  lat.sort((a, b) => a - b);
  const seconds = (last - first) / 1000;
  return {
    name,
    events: started.size,
    seconds,
    perSecond: lat.length / seconds,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
    requests,
    lost: started.size - lat.length,
    ...extra,
  };
}

async function bare(receiver: Receiver, n: number, inFlight: number): Promise<Figures> {
  await receiver.ask({ cmd: 'reset', failRate: 0 });
  const agent = new http.Agent({ keepAlive: true, maxSockets: inFlight });
  const project = randomUUID();
  const secret = generateSecret();
  const started = new Map<string, number>();
  const cpu0 = process.cpuUsage();
  let next = 0;
  const one = (id: string, body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: receiver.port,
          path: '/hook',
          method: 'POST',
          agent,
          headers: { ...signatureHeaders([secret], id, body), 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        next++;
        const id = `evt_bare${randomUUID().replace(/-/g, '')}`;
        const body = JSON.stringify({
          id,
          type: 'session.completed',
          created: new Date().toISOString(),
          project_id: project,
          text: 'x',
          data: sampleEventData('session.completed'),
        });
        started.set(id, now());
        await one(id, body);
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  return figures('bare loop of HTTP posts', receiver, started, { cpuPerDelivery: (cpu.user + cpu.system) / n });
}

async function viaWorker(
  name: string,
  db: Db,
  receiver: Receiver,
  n: number,
  options: { failRate: number; schedule?: readonly number[]; rate?: number; backlog?: boolean; bulk?: number },
): Promise<Figures> {
  await receiver.ask({ cmd: 'reset', failRate: options.failRate });
  const project = randomUUID();
  await db.query('INSERT INTO projects (id, name) VALUES ($1, $2)', [project, name]);
  // Sealed, as the server stores it (the worker opens it once, not per attempt).
  const secrets = sealer(randomBytes(32));
  const webhookId = `wh_${randomUUID().replace(/-/g, '')}`;
  await db.query(`INSERT INTO webhooks (id, project_id, url, subscribed_events, secret) VALUES ($1, $2, $3, ARRAY['session.completed'], $4)`, [
    webhookId,
    project,
    `http://127.0.0.1:${receiver.port}/hook`,
    sealSecret(secrets, webhookId, generateSecret()),
  ]);
  // The run's own signals, as a server's: its emits nudge its worker.
  const signals = createSignals();
  const worker = new DeliveryWorker({ db, secrets, signals, allowPrivate: true, retrySchedule: options.schedule });
  if (!options.backlog) await worker.start();
  const started = new Map<string, number>();
  let cpu0 = process.cpuUsage();
  const t0 = now();
  const bulk = options.bulk ?? 1;
  for (let i = 0; i < n; i += bulk) {
    // Each event (or group) comes from its own state change, as from separate requests: yield to the
    // event loop between them (PGlite runs in this thread, so a bare loop would starve it).
    if (options.rate) {
      const due = t0 + (i * 1000) / options.rate;
      const wait = due - now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    } else {
      await new Promise((r) => setImmediate(r));
    }
    if (bulk > 1) {
      const group = Array.from({ length: Math.min(bulk, n - i) }, () => ({
        projectId: project,
        type: 'session.completed' as const,
        data: sampleEventData('session.completed'),
      }));
      const evs = await db.transaction((tx) => emitEvents(tx, signals, group));
      const at = now(); // committed
      for (const ev of evs) started.set(ev.id, at);
    } else {
      const ev = await db.transaction((tx) => emitEvent(tx, signals, project, 'session.completed', sampleEventData('session.completed')));
      started.set(ev.id, now()); // committed
    }
  }
  const emitSeconds = (now() - t0) / 1000;
  if (options.backlog) {
    // Everything is queued: time the worker alone, from its start.
    const t = now();
    for (const id of started.keys()) started.set(id, t);
    cpu0 = process.cpuUsage();
    await worker.start();
  }
  const settled = async () => {
    const [{ pending }] = await db.query<{ pending: number }>(
      `SELECT count(*)::int AS pending FROM webhook_deliveries WHERE project_id = $1 AND status = 'pending'`,
      [project],
    );
    return pending === 0;
  };
  await waitForAll(receiver, n, 10 * 60_000, settled);
  await worker.stop(5000);
  const cpu = process.cpuUsage(cpu0);
  const [{ dead }] = await db.query<{ dead: number }>(`SELECT count(*)::int AS dead FROM webhook_deliveries WHERE project_id = $1 AND status = 'dead'`, [
    project,
  ]);
  return figures(name, receiver, started, { dead, emitPerSecond: n / emitSeconds, cpuPerDelivery: (cpu.user + cpu.system) / n });
}

async function main() {
  const n = Number(arg('events', '10000'));
  const dbKind = arg('db', process.env.DATABASE_URL ? 'postgres' : 'dir');
  const usage = (why: string) => {
    console.error(`bench/webhooks: ${why}`);
    process.exit(2);
  };
  if (!['memory', 'dir', 'postgres'].includes(dbKind)) usage(`--db ${dbKind}: expected memory, dir or postgres`);
  if (dbKind === 'postgres' && !process.env.DATABASE_URL) usage('--db postgres needs DATABASE_URL (for example postgres://postgres@127.0.0.1:5432/test)');
  const perWebhook = 8; // the worker's default in-flight limit for one webhook
  let dataDir: string | undefined;
  if (dbKind === 'dir') dataDir = mkdtempSync(join(tmpdir(), 'bench-webhooks-'));
  // PostgreSQL: a schema of its own, dropped at the end (the database may be shared).
  const schema = dbKind === 'postgres' ? `bench_webhooks_${randomUUID().slice(0, 8)}` : undefined;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };
  if (schema) await admin(`CREATE SCHEMA ${schema}`);
  const db = await openDb({ databaseUrl: schema ? withSearchPath(process.env.DATABASE_URL!, schema) : undefined, dataDir });
  await migrate(db);
  const receiver = await Receiver.start();
  try {
    const runs = new Set(arg('runs', 'bare,worker,backlog,bulk,paced,flaky').split(','));
    const results: Figures[] = [];
    // The bare loop is the yardstick: always run.
    results.push(await bare(receiver, n, perWebhook));
    if (runs.has('worker')) results.push(await viaWorker('worker', db, receiver, n, { failRate: 0 }));
    if (runs.has('backlog')) results.push(await viaWorker('worker, draining a backlog', db, receiver, n, { failRate: 0, backlog: true }));
    if (runs.has('bulk')) results.push(await viaWorker('worker, events emitted 50 at a time', db, receiver, n, { failRate: 0, bulk: 50 }));
    if (runs.has('paced')) {
      const single = results.find((r) => r.name === 'worker');
      const rate = Number(arg('rate', String(Math.round((single?.perSecond ?? 300) / 2))));
      results.push(await viaWorker(`worker, events paced at ${rate}/s`, db, receiver, Math.min(n, rate * 10), { failRate: 0, rate }));
    }
    if (runs.has('flaky')) {
      results.push(
        await viaWorker('worker, receiver failing 30 %', db, receiver, n, {
          failRate: 0.3,
          schedule: DEFAULT_RETRY_SCHEDULE_MS.map((ms) => ms / 10_000),
        }),
      );
    }
    const base = results[0];
    const rows = results.map((r) => ({
      run: r.name,
      events: r.events,
      'deliveries/s': Math.round(r.perSecond),
      'ratio to bare': (r.perSecond / base.perSecond).toFixed(2),
      'p50 ms': r.p50.toFixed(1),
      'p99 ms': r.p99.toFixed(1),
      requests: r.requests,
      lost: r.lost,
      dead: r.dead ?? '-',
      'emitted/s': r.emitPerSecond ? Math.round(r.emitPerSecond) : '-',
      'CPU µs/delivery': r.cpuPerDelivery ? Math.round(r.cpuPerDelivery) : '-',
    }));
    console.log(`bench/webhooks on ${machine()}: ${n} events, database ${db.kind}${dataDir ? ' (DATA_DIR)' : ''}, ${perWebhook} in flight per webhook`);
    console.table(rows);
    const out = arg('out', '');
    if (out) writeFileSync(out, JSON.stringify({ n, db: dbKind, results }, null, 2));
  } finally {
    receiver.stop();
    await db.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (schema) await admin(`DROP SCHEMA ${schema} CASCADE`);
  }
}

if (!process.argv.includes('--receiver')) await main();
