// A cluster for tests and the benchmark: N real server processes (child-server.ts) on one
// PostgreSQL schema, sharing SECRETS_KEY, CLUSTER_SECRET and a PUBLIC_URL that points at a
// tiny round-robin front (HTTP and WebSocket upgrades, no stickiness), as an ordinary load
// balancer would be. The front forwards with the same code the nodes use (forward.ts), minus
// the cluster proof: it is a client like any other.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call } from '../batches/test-support.js';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { keepIdleConnections } from '../http/keep-alive.js';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { freePort } from '../testing/free-port.js';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { urlWithSchema, withPostgresSchema } from '../store/pg-schema.js';
import { forwardHttp, forwardUpgrade } from './forward.js';

export interface Front {
  url: string;
  /** The nodes it spreads requests over, in turn. */
  targets: string[];
  /** Requests (HTTP and upgrades) it passed on, per target. */
  counts: Map<string, number>;
  close(): Promise<void>;
}

export async function startFront(): Promise<Front> {
  let next = 0;
  const front: Omit<Front, 'url' | 'close'> = { targets: [], counts: new Map() };
  const pick = () => {
    const t = front.targets[next++ % front.targets.length];
    front.counts.set(t, (front.counts.get(t) ?? 0) + 1);
    return t;
  };
  const server: Server = createServer((req, res) => {
    if (!front.targets.length) return void res.writeHead(503).end();
    void forwardHttp(req, res, pick(), {});
  });
  server.on('upgrade', (req, socket, head) => {
    if (!front.targets.length) return void socket.destroy();
    forwardUpgrade(req, socket, head, pick(), {});
  });
  // A load balancer's usual idle time-out, below the nodes' 65 s (server.ts).
  keepIdleConnections(server, 60);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(front, {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

export interface TestCluster {
  front: Front;
  nodes: (ChildServer & { id: string; dataDir: string })[];
  apiKey: string;
  /** The schema's URL, for a test's own queries. */
  databaseUrl: string;
  /**
   * Stops node i with SIGTERM (its drain: new sessions go elsewhere, running ones finish up
   * to SHUTDOWN_GRACE_SECONDS), waits for its exit, and starts it again with the same NODE_ID
   * and DATA_DIR: on a new port (the address the others remembered no longer answers) unless
   * `samePort`. The front sends to the new address.
   */
  restart(i: number, o?: { samePort?: boolean }): Promise<void>;
  close(): Promise<void>;
}

export const TEST_CLUSTER_SECRET = 'test-cluster-secret-0123456789abcdef0123456789';

/** One node of a cluster on 127.0.0.1:port, with what every node of it shares. */
export function startClusterNode(n: {
  id: string;
  dataDir: string;
  apiKey: string;
  databaseUrl: string;
  port: number;
  publicUrl: string;
  secretsKey: string;
  env?: Record<string, string>;
}): Promise<ChildServer> {
  return startChildServer({
    dataDir: n.dataDir,
    apiKey: n.apiKey,
    databaseUrl: n.databaseUrl,
    port: n.port,
    env: {
      PUBLIC_URL: n.publicUrl,
      NODE_ID: n.id,
      NODE_INTERNAL_URL: `http://127.0.0.1:${n.port}`,
      CLUSTER_SECRET: TEST_CLUSTER_SECRET,
      SECRETS_KEY: n.secretsKey,
      ...n.env,
    },
  });
}

/**
 * Starts `count` nodes (ids node-a, node-b, ...) behind a front, on a fresh schema of
 * DATABASE_URL. The first node migrates the schema; the others start together after it.
 */
export async function startTestCluster(o: {
  databaseUrl: string;
  count: number;
  env?: Record<string, string>;
  nodeEnv?: (i: number) => Record<string, string>;
}): Promise<TestCluster> {
  const front = await startFront();
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const secretsKey = randomBytes(32).toString('hex');
  let release!: () => void;
  let schemaDone!: Promise<void>;
  const databaseUrl = await new Promise<string>((resolveUrl) => {
    schemaDone = withPostgresSchema(o.databaseUrl, 'cluster', (url) => {
      resolveUrl(url);
      return new Promise<void>((r) => (release = r));
    });
  });
  const nodes: TestCluster['nodes'] = [];
  const start = async (i: number, again?: { dataDir: string; port?: number }) => {
    const id = `node-${String.fromCharCode(97 + i)}`;
    const dataDir = again?.dataDir ?? mkdtempSync(join(tmpdir(), `cb-${id}-`));
    const port = again?.port ?? (await freePort());
    const node = await startClusterNode({
      id,
      dataDir,
      apiKey,
      databaseUrl,
      port,
      publicUrl: front.url,
      secretsKey,
      env: { ...o.env, ...o.nodeEnv?.(i) },
    }).catch((err: Error) => {
      if (!again) rmSync(dataDir, { recursive: true, force: true });
      throw err;
    });
    nodes[i] = Object.assign(node, { id, dataDir });
  };
  const close = async () => {
    await front.close();
    await Promise.all(
      nodes.map(async (n) => {
        if (n.child.exitCode === null && n.child.signalCode === null) n.child.kill('SIGTERM');
        const done = await Promise.race([n.exited, new Promise((r) => setTimeout(r, 20_000, 'timeout'))]);
        if (done === 'timeout') {
          n.child.kill('SIGKILL');
          await n.exited;
        }
        rmSync(n.dataDir, { recursive: true, force: true });
      }),
    );
    release();
    await schemaDone;
  };
  const restart = async (i: number, r: { samePort?: boolean } = {}) => {
    const old = nodes[i];
    old.child.kill('SIGTERM');
    await old.exited;
    await start(i, { dataDir: old.dataDir, port: r.samePort ? Number(new URL(old.url).port) : undefined });
    front.targets[front.targets.indexOf(old.url)] = nodes[i].url;
  };
  try {
    await start(0);
    await Promise.all(Array.from({ length: o.count - 1 }, (_, i) => start(i + 1)));
  } catch (err) {
    await close();
    throw err;
  }
  front.targets.push(...nodes.map((n) => n.url));
  return { front, nodes, apiKey, databaseUrl, restart, close };
}

/** What the node tests share (cluster.test.ts, lifecycle.test.ts): a schema of DATABASE_URL of
 *  their own, a webhook receiver, and real nodes started one by one. */
export interface NodeFixture {
  /** The schema's URL, as the nodes use it. */
  url: string;
  /** A connection of the test's own, on the schema. */
  sql: pg.Client;
  receiver: Receiver;
  adminToken: string;
  /** A node with this NODE_ID and DATA_DIR (killed with SIGKILL at close if still running). */
  node(id: string, dataDir: string, env?: Record<string, string>): Promise<ChildServer>;
  /** The receiver's webhook, once for the fixture (the database, and so the project, is shared). */
  subscribe(s: ChildServer): Promise<void>;
  /** A fresh DATA_DIR, removed at close. */
  dir(name: string): string;
  /** The admin API's node listing, through `s`. */
  nodes(s: ChildServer): Promise<{ id: string; status: string; running: number; capacity: number; draining: boolean }[]>;
  /** What the receiver got, parsed. */
  events(): { type: string; data: Record<string, any> }[];
  /** A session's events, its recording's aside. */
  ofSession(id: string): { type: string; data: Record<string, any> }[];
  close(): Promise<void>;
}

export const NODE_SESSION = { session: { recording: { active: false } }, browser: { headless: { active: true } } };

export async function openNodeFixture(databaseUrl: string, deadAfterSeconds: number): Promise<NodeFixture> {
  const adminToken = randomBytes(32).toString('hex');
  const clusterSecret = randomBytes(32).toString('hex');
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const secretsKey = randomBytes(32).toString('hex');
  const cleanups: (() => Promise<void> | void)[] = [];
  const close = async () => {
    for (const c of cleanups.reverse()) await c();
  };
  const schema = `test_cluster_${randomBytes(6).toString('hex')}`;
  const sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  cleanups.push(async () => {
    await sql.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await sql.end();
  });
  await sql.query(`CREATE SCHEMA ${schema}`);
  await sql.query(`SET search_path = ${schema}`);
  const url = urlWithSchema(databaseUrl, schema);
  const receiver = await startReceiver().catch(async (err: Error) => {
    await close();
    throw err;
  });
  cleanups.push(() => receiver.close());

  const events = () => receiver.received.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, any> });
  let subscribed = false;
  return {
    url,
    sql,
    receiver,
    adminToken,
    async node(id, dataDir, env = {}) {
      const port = await freePort();
      const s = await startChildServer({
        dataDir,
        apiKey,
        databaseUrl: url,
        port,
        env: {
          NODE_INTERNAL_URL: `http://127.0.0.1:${port}`,
          NODE_ID: id,
          NODE_DEAD_AFTER_SECONDS: String(deadAfterSeconds),
          CLUSTER_SECRET: clusterSecret,
          SECRETS_KEY: secretsKey,
          ADMIN_TOKEN: adminToken,
          // 30 batch sessions and B's two fit on the two survivors alone (B may die early in its share).
          MAX_CONCURRENT_BROWSERS: '16',
          BATCH_CONCURRENCY: '3',
          TASK_CONCURRENCY: '1',
          // The drain test sets its own; the others' final SIGTERM need not wait for their sessions.
          SHUTDOWN_GRACE_SECONDS: '1',
          ...env,
        },
      });
      cleanups.push(async () => {
        if (s.child.exitCode === null && s.child.signalCode === null) {
          s.child.kill('SIGKILL');
          await s.exited;
        }
      });
      return s;
    },
    async subscribe(s) {
      if (subscribed) return;
      const r = await call(s, 'POST', '/v1/webhooks', {
        url: receiver.url,
        subscribed_events: ['session.completed', 'session.failed', 'task.failed', 'batch.completed', 'batch.failed'],
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      subscribed = true;
    },
    dir(name) {
      const d = mkdtempSync(join(tmpdir(), `cb-cluster-${name}-`));
      cleanups.push(() => rmSync(d, { recursive: true, force: true }));
      return d;
    },
    async nodes(s) {
      const r = await call(s, 'GET', '/admin/v1/nodes', undefined, { authorization: `Bearer ${adminToken}` });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data;
    },
    events,
    ofSession: (id) => events().filter((e) => e.data.session_id === id && e.type.startsWith('session.') && e.type !== 'session.recording.ready'),
    close,
  };
}

/**
 * The conformance CLI (a child process) against a cluster's front, with the admin token: the
 * checks `only` names, every check without it. Its JSON report's summary, its output, its
 * exit code.
 */
export async function runConformance(
  cluster: TestCluster,
  adminToken: string,
  only?: string[],
): Promise<{ summary: { passed: number; failed: number; skipped: number }; out: string; code: number | null }> {
  const reportDir = mkdtempSync(join(tmpdir(), 'cb-cluster-conformance-'));
  try {
    const report = join(reportDir, 'report.json');
    const args = [
      '--import',
      'tsx',
      'conformance/cli.ts',
      '--base-url',
      cluster.front.url,
      '--api-key',
      cluster.apiKey,
      '--admin-token',
      adminToken,
      '--json',
      report,
      // Three nodes, their browsers and the front share two cores with the suite's other
      // lanes: a default session's cold start through the front took past the usual 30 s on
      // a machine three times slower than most days (2026-12-07). A request's deadline, not a wait.
      '--timeout-ms',
      '60000',
    ];
    if (only) args.push('--only', only.join(','));
    let out = '';
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, args, { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.once('exit', resolve);
    });
    const summary = JSON.parse(readFileSync(report, 'utf8')).summary as { passed: number; failed: number; skipped: number };
    return { summary, out, code };
  } finally {
    rmSync(reportDir, { recursive: true, force: true });
  }
}

/**
 * The conformance suite's checks `families` (undefined: every check) through a round-robin
 * front over a three-node cluster on `databaseUrl`, the nodes sharing one local S3 store:
 * the hooks and the test `passes` of the describe it is called in. Every check must pass, and
 * the front must have sent requests to every node.
 */
export function conformanceThroughCluster(databaseUrl: string, label: string, families: string[] | undefined, timeoutMs: number): void {
  let cluster: TestCluster;
  let s3: LocalS3;
  const adminToken = `adm_${randomBytes(24).toString('hex')}`;

  beforeAll(async () => {
    s3 = await startLocalS3();
    cluster = await startTestCluster({
      databaseUrl,
      count: 3,
      env: { ADMIN_TOKEN: adminToken, MAX_CONCURRENT_BROWSERS: '4', ...(s3.env() as Record<string, string>) },
    });
  }, 240_000);
  afterAll(async () => {
    await cluster?.close();
    await s3?.stop();
  }, 60_000);

  it(
    'passes',
    async () => {
      const { summary, out, code } = await runConformance(cluster, adminToken, families);
      console.log(`cluster conformance (${label}): ${JSON.stringify(summary)}`);
      // Every request went through the front, and the front spread them over all three nodes.
      expect(cluster.front.targets.every((t) => (cluster.front.counts.get(t) ?? 0) > 0)).toBe(true);
      expect(summary.passed).toBeGreaterThan(0);
      expect(
        out
          .split('\n')
          .filter((l) => /\] FAIL /.test(l))
          .join('\n'),
      ).toBe('');
      expect(code).toBe(0);
    },
    timeoutMs,
  );
}
