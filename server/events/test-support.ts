// Shared by this folder's tests (not a test itself): a migrated database per test file
// (PGlite in memory, or a fresh schema on PostgreSQL when DATABASE_URL is set), projects,
// and real HTTP receivers on loopback.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { openDb, type Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { sealer, type Secrets } from '../secrets/index.js';
import { openTestPglite } from '../testing/pglite-template.js';
import { createSignals, type Signals } from '../capability/index.js';

export interface TestDb {
  db: Db;
  /** The secrets the webhooks' signing secrets are sealed with (a key of this test file's own). */
  secrets: Secrets;
  /** Signals of this test file's own, as a server's: emits here nudge the workers given them. */
  signals: Signals;
  /** Connection options a child process can use to reach the same database. */
  databaseUrl?: string;
  close(): Promise<void>;
}

/** A connection string whose sessions use `schema` as their search_path. */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

export async function openTestDb(): Promise<TestDb> {
  const secrets = sealer(randomBytes(32));
  const base = process.env.DATABASE_URL;
  if (!base) {
    const db = await openTestPglite();
    return { db, secrets, signals: createSignals(), close: () => db.close() };
  }
  const schema = `t_events_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const databaseUrl = withSearchPath(base, schema);
  const db = await openDb({ databaseUrl });
  await migrate(db);
  return {
    db,
    secrets,
    signals: createSignals(),
    databaseUrl,
    async close() {
      await db.close();
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP SCHEMA ${schema} CASCADE`);
      await c.end();
    },
  };
}

export async function createProject(db: Db, id: string = randomUUID()): Promise<string> {
  await db.query('INSERT INTO projects (id, name) VALUES ($1, $2)', [id, `test ${id}`]);
  return id;
}

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export type ReceiverHandler = (req: http.IncomingMessage, body: string, res: http.ServerResponse, n: number) => void | Promise<void>;

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  setHandler(h: ReceiverHandler): void;
  close(): Promise<void>;
}

/** A real HTTP server on 127.0.0.1 that records every request; answers 200 unless told. */
export async function startReceiver(handler?: ReceiverHandler): Promise<Receiver> {
  let current: ReceiverHandler =
    handler ??
    ((_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ path: req.url ?? '', headers: req.headers, body, at: performance.now() });
      void Promise.resolve(current(req, body, res, received.length)).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    setHandler: (h) => {
      current = h;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Insert a webhook directly (bypassing create's URL policy), returning its id and secret. */
export async function insertWebhook(
  db: Db,
  projectId: string,
  url: string,
  events: string[],
  opts: { secret?: string; enabled?: boolean } = {},
): Promise<{ id: string; secret: string }> {
  const id = `wh_${randomBytes(8).toString('hex')}`;
  const secret = opts.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  await db.query(`INSERT INTO webhooks (id, project_id, url, subscribed_events, enabled, secret) VALUES ($1, $2, $3, $4::text[], $5, $6)`, [
    id,
    projectId,
    url,
    events,
    opts.enabled ?? true,
    secret,
  ]);
  return { id, secret };
}
