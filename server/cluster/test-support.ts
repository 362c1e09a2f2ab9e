// A cluster for tests and the benchmark: N real server processes (child-server.ts) on one
// PostgreSQL schema, sharing SECRETS_KEY, CLUSTER_SECRET and a PUBLIC_URL that points at a
// tiny round-robin front (HTTP and WebSocket upgrades, no stickiness), as an ordinary load
// balancer would be. The front forwards with the same code the nodes use (forward.ts), minus
// the cluster proof: it is a client like any other.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keepIdleConnections } from '../http/keep-alive.js';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { freePort } from '../testing/free-port.js';
import { withPostgresSchema } from '../store/pg-schema.js';
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

/**
 * Starts `count` nodes (ids node-a, node-b, ...) behind a front, on a fresh schema of
 * DATABASE_URL. The first node migrates the schema; the others start together after it.
 */
export async function startTestCluster(o: { databaseUrl: string; count: number; env?: Record<string, string>; nodeEnv?: (i: number) => Record<string, string> }): Promise<TestCluster> {
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
    const node = await startChildServer({
      dataDir,
      apiKey,
      databaseUrl,
      port,
      env: {
        PUBLIC_URL: front.url,
        NODE_ID: id,
        NODE_INTERNAL_URL: `http://127.0.0.1:${port}`,
        CLUSTER_SECRET: TEST_CLUSTER_SECRET,
        SECRETS_KEY: secretsKey,
        ...o.env,
        ...o.nodeEnv?.(i),
      },
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
