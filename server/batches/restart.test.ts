// A server killed (SIGKILL) in the middle of a batch resumes it when it starts again, and no
// item is provisioned twice. The server runs as a child process (one process, so the kill
// reaches it: server/testing/server-build.ts). The kill lands while an item's
// session is starting: its first items' pages load from a local server that holds the
// second item's request until the kill. Between the two runs the test also leaves an item
// claimed whose session was never made, the other state a kill can leave.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../store/db.js';
import { withPostgresSchema } from '../store/pg-schema.js';
import { backends, type Backend } from '../testing/harness.js';
import { RESTART_ERROR } from './worker.js';
import { batchEnd, call, getBatch, until } from './test-support.js';
import { freePort } from '../testing/free-port.js';
import { seedPglite } from '../testing/pglite-template.js';
import { serverCommand } from '../testing/server-build.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Child {
  proc: ChildProcess;
  exited: Promise<void>;
}

async function startChild(env: Record<string, string>, base: string): Promise<Child> {
  const [command, args] = serverCommand();
  const proc = spawn(command, args, {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  cleanups.push(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await exited;
    }
  });
  await until(
    () =>
      fetch(`${base}/healthz`).then(
        (r) => r.ok,
        () => false,
      ),
    (up) => {
      if (proc.exitCode !== null) throw new Error(`server exited: ${stderr}`);
      return up;
    },
    60_000,
  );
  return { proc, exited };
}

describe.each(backends)('a restart in the middle of a batch on %s', (backend: Backend) => {
  it('resumes the batch and provisions no item twice', { timeout: 180_000 }, async () => {
    if (backend === 'postgres') await withPostgresSchema(process.env.DATABASE_URL!, 'test_batch_restart', (url) => scenario(url));
    else await scenario(undefined);
  });
});

/** databaseUrl undefined: PGlite in the DATA_DIR the two runs share. */
async function scenario(databaseUrl: string | undefined) {
  // The page every item's session opens: in the first run only the first request is
  // answered; later ones are held (the session stays starting).
  const held: ServerResponse[] = [];
  let holding = true;
  let pageRequests = 0;
  let onHeld: (() => void) | undefined;
  const pages = createServer((req, res) => {
    if (!req.url?.startsWith('/page')) return void res.writeHead(404).end();
    pageRequests++;
    if (holding && pageRequests > 1) {
      held.push(res);
      onHeld?.();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>item</title>');
  });
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    for (const res of held) res.destroy();
    pages.closeAllConnections();
    return new Promise<void>((r) => pages.close(() => r()));
  });
  const pageUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}/page`;

  const dataDir = mkdtempSync(join(tmpdir(), 'cb-batch-restart-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  if (!databaseUrl) seedPglite(dataDir);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const env = {
    PORT: String(port),
    DATA_DIR: dataDir,
    BOOTSTRAP_API_KEY: apiKey,
    ALLOW_PRIVATE_NETWORKS: 'true',
    BROWSER_POOL_SIZE: '0',
    BATCH_CONCURRENCY: '1',
    MAX_CONCURRENT_BROWSERS: '4',
    // Never the caller's database itself: PGlite, or this test's own schema.
    DATABASE_URL: databaseUrl ?? '',
  };
  const open = () => openDb(databaseUrl ? { databaseUrl } : { dataDir });
  const api = {
    request: (path: string, init: RequestInit = {}) =>
      fetch(base + path, { ...init, headers: { 'service-api-key': apiKey, ...(init.headers as Record<string, string>) } }),
  };

  // First run: item 0 starts; item 1's session is starting (its page is held) at the kill.
  const first = await startChild(env, base);
  const created = await call(api, 'POST', '/v1/batch-sessions', {
    count: 3,
    configuration: { browser: { headless: { active: true } }, session: { initial_url: pageUrl } },
  });
  expect(created.status).toBe(200);
  const batchId = created.body.data.batch_id as string;
  const heldNow = new Promise<void>((r) => (onHeld = r));
  if (held.length === 0) await heldNow;
  const item0 = await getBatch(api, batchId);
  expect(item0.sessions[0].status).toBe('completed');
  const session0 = item0.sessions[0].session_id as string;
  first.proc.kill('SIGKILL');
  await first.exited;

  // What the kill left: item 0 done, item 1 claimed with a session that never ran, item 2
  // not claimed yet. Item 2 is made to look claimed by this node too, its session never
  // made (the kill landed between the claim and the session's insert).
  const db = await open();
  const left = await db.query<{ item_index: number; status: string; session_id: string | null; claimed_by: string | null }>(
    'SELECT item_index, status, session_id, claimed_by FROM batch_items WHERE batch_id = $1 ORDER BY item_index',
    [batchId],
  );
  expect(left.map((i) => i.status)).toEqual(['completed', 'provisioning']);
  expect((await db.query<{ next_index: number }>('SELECT next_index FROM batches WHERE id = $1', [batchId]))[0].next_index).toBe(2);
  const session1 = left[1].session_id!;
  const [s1] = await db.query<{ status: string; started_at: Date | null }>('SELECT status, started_at FROM sessions WHERE id = $1', [session1]);
  expect(s1).toMatchObject({ status: 'starting', started_at: null });
  const ghost = randomUUID();
  await db.transaction(async (tx) => {
    await tx.query(`UPDATE batches SET next_index = 3 WHERE id = $1`, [batchId]);
    await tx.query(`INSERT INTO batch_items (batch_id, item_index, status, session_id, claimed_by, claimed_at) VALUES ($1, 2, 'provisioning', $2, $3, now())`, [
      batchId,
      ghost,
      left[1].claimed_by,
    ]);
  });
  await db.close();

  // Second run: pages answer again.
  holding = false;
  for (const res of held.splice(0)) res.destroy();
  const second = await startChild(env, base);
  const done = await batchEnd(api, batchId, 60_000);
  expect(done).toMatchObject({ status: 'completed', total_requests: 3, completed_requests: 2, failed_requests: 1, pending_requests: 0 });
  expect(done.sessions[0]).toMatchObject({ status: 'completed', session_id: session0 });
  expect(done.sessions[1]).toMatchObject({ status: 'failed', session_id: null, error: RESTART_ERROR });
  expect(done.sessions[2].status).toBe('completed');
  const session2 = done.sessions[2].session_id as string;
  expect([session0, session1, ghost]).not.toContain(session2);

  // One session per item, each with the batch's id: the batch made exactly three.
  const listed = await call(api, 'GET', `/v1/sessions?batch_id=${batchId}&limit=100`);
  expect(listed.body.data.map((s: any) => s.id).sort()).toEqual([session0, session1, session2].sort());
  const byId = Object.fromEntries(listed.body.data.map((s: any) => [s.id, s]));
  expect(byId[session0].status).toBe('failed'); // ended by the restart, after it ran
  expect(byId[session1].status).toBe('failed'); // never ran
  expect(byId[session2].status).toBe('running');

  second.proc.kill('SIGTERM');
  await second.exited;
  const after = await open();
  const events = await after.query<{ type: string; data: any }>(`SELECT type, data FROM events WHERE type LIKE 'batch.%'`);
  await after.close();
  expect(events).toEqual([
    { type: 'batch.completed', data: { batch_id: batchId, total_requests: 3, completed_requests: 2, failed_requests: 1, status: 'completed' } },
  ]);
}
