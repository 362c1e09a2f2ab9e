// Nothing is lost: a worker process killed with SIGKILL in the middle of deliveries (and of
// emitting events) leaves no committed event undelivered once a new worker runs.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createSignals } from '../capability/index.js';
import { openDb, type Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { emitEvent } from '../outbox/emit.js';
import { sampleEventData } from './samples.js';
import { createProject, insertWebhook, openTestDb, startReceiver, waitFor, type TestDb } from './test-support.js';
import { seedPglite } from '../testing/pglite-template.js';

/** This file's own signals, as a server's: nothing here listens (no worker in this process). */
const signals = createSignals();

const child = fileURLToPath(new URL('./test-worker-child.ts', import.meta.url));
const root = fileURLToPath(new URL('../../', import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Running {
  proc: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
}

function run(env: Record<string, string>): Running {
  const proc = spawn(process.execPath, ['--import', 'tsx', child], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
  });
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) =>
    proc.on('exit', (code) => {
      if (code !== 0 && code !== null) console.error(stderr);
      r(code);
    }),
  );
  cleanups.push(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  return { proc, lines, exited };
}

describe('kill -9 during delivery', () => {
  // Child processes start slowly on a busy machine: a generous limit of its own.
  it.each([
    ['one event a transaction', 1],
    ['ten events a transaction (emitEvents)', 10],
  ])(
    'a new worker delivers every committed event (at least once): %s',
    async (_name, bulk) => {
      // The database: PGlite in a DATA_DIR the child processes open in turn, or PostgreSQL.
      let dbEnv: Record<string, string>;
      let reopen: () => Promise<Db>;
      let db: Db;
      const pgUrl = process.env.DATABASE_URL;
      let shared: TestDb | undefined;
      if (pgUrl) {
        shared = await openTestDb();
        cleanups.push(() => shared!.close());
        db = shared.db;
        dbEnv = { DATABASE_URL: shared.databaseUrl! };
        reopen = async () => shared!.db;
      } else {
        const dataDir = mkdtempSync(join(tmpdir(), 'events-kill-'));
        cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
        seedPglite(dataDir);
        db = await openDb({ dataDir });
        await migrate(db);
        dbEnv = { DATA_DIR: dataDir, DATABASE_URL: '' };
        reopen = () => openDb({ dataDir });
      }

      // A receiver that takes a little while, so deliveries are in flight at the kill.
      const inFlight = new Set<string>();
      const rcv = await startReceiver(async (req, _body, res) => {
        const id = String(req.headers['webhook-id']);
        inFlight.add(id);
        await new Promise((r) => setTimeout(r, 40));
        inFlight.delete(id);
        res.end('ok');
      });
      cleanups.push(() => rcv.close());

      const project = await createProject(db);
      await insertWebhook(db, project, rcv.url, ['session.completed']);
      const before = 150;
      for (let i = 0; i < before; i++) await emitEvent(db, signals, project, 'session.completed', sampleEventData('session.completed'));
      if (!pgUrl) await db.close(); // one process at a time opens a PGlite DATA_DIR

      // First worker: delivers and emits more events; killed mid-way.
      const emit = 150 * bulk ** 0.5; // more events when grouped, so the kill still comes before the last
      const first = run({ ...dbEnv, PROJECT_ID: project, EMIT: String(Math.round(emit)), BULK: String(bulk), CONCURRENCY: '4' });
      await waitFor(() => first.lines.includes('ready'), 60_000, 'the first worker');
      await waitFor(() => rcv.received.length >= 60 && inFlight.size > 0, 60_000, 'deliveries in flight');
      const committedBeforeKill = first.lines.filter((l) => l.startsWith('committed ')).length;
      first.proc.kill('SIGKILL');
      expect(await first.exited).toBeNull();
      const receivedAtKill = new Set(rcv.received.map((r) => r.headers['webhook-id'])).size;
      expect(committedBeforeKill).toBeGreaterThan(0); // it was emitting, too
      expect(committedBeforeKill).toBeLessThan(emit);

      // Second worker: runs until nothing is pending, then exits.
      const second = run({ ...dbEnv, PROJECT_ID: project, CONCURRENCY: '8', EXIT_WHEN_DONE: '1' });
      expect(await second.exited).toBe(0);
      expect(second.lines.some((l) => l.startsWith('done '))).toBe(true);

      const check = pgUrl ? db : await reopen();
      if (!pgUrl) cleanups.push(() => check.close());
      const events = await check.query<{ id: string }>('SELECT id FROM events WHERE project_id = $1', [project]);
      expect(events.length).toBeGreaterThanOrEqual(before + committedBeforeKill);
      const received = new Set(rcv.received.map((r) => String(r.headers['webhook-id'])));
      const missing = events.filter((e) => !received.has(e.id));
      expect(missing).toEqual([]);
      expect(receivedAtKill).toBeLessThan(events.length); // the kill did interrupt the work
      const undelivered = await check.query(
        `SELECT e.id FROM events e WHERE e.project_id = $1 AND NOT EXISTS
         (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status = 'succeeded')`,
        [project],
      );
      expect(undelivered).toEqual([]);
      if (process.env.DEBUG_KILL)
        console.log({ committedBeforeKill, receivedAtKill, events: events.length, requests: rcv.received.length, unique: received.size });
    },
    240_000,
  );
});
