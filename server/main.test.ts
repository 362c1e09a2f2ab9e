// Ctrl+C on `pnpm start`, as a terminal sends it: SIGINT to the whole process group. The
// server must stop gracefully. It did not while `pnpm start` ran the tsx CLI, which runs the
// server in a child of its own and passes signals on: a child slow to confirm one got it
// again (main.ts took that for a second Ctrl+C and exited) or a SIGKILL, so its sessions
// were not ended and their roots were left to the next start's sweep. `pnpm start` is now
// `node --import tsx`, one process.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { groupUsage } from './browser/procfs.js';
import { openDb } from './store/db.js';
import { startChildServer, type ChildServer } from './testing/child-server.js';
import { HEADLESS, browsersDirFor, createSession, eventually, gone, rootOf } from './sessions/test-support.js';

const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-ctrl-c-'));
let server: ChildServer | undefined;

afterAll(() => {
  if (server?.child.pid) {
    try {
      process.kill(-server.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

it('Ctrl+C on `pnpm start` stops the server gracefully: its session is ended, its browser and root are gone', { timeout: 120_000 }, async () => {
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  server = await startChildServer({ dataDir, apiKey, pnpmStart: true });
  const session = await createSession(server, HEADLESS);
  const browsersDir = browsersDirFor(dataDir);
  const root = rootOf(browsersDir, session.id);
  expect(gone(root).processes.length).toBeGreaterThan(0);

  const group = server.child.pid!;
  process.kill(-group, 'SIGINT');
  // pnpm ends at once; the server once its stop is done (within SHUTDOWN_GRACE_SECONDS and the ends).
  await eventually(() => groupUsage(new Set([group])).processes === 0, 90_000, 'the server to stop');
  expect(gone(root)).toEqual({ processes: [], directory: false });
  expect(existsSync(browsersDir)).toBe(false);

  // Ended by the stop (a stop ends what runs as server_shutdown), not left running for the next start to find.
  const db = await openDb({ dataDir });
  try {
    const [row] = await db.query<{ status: string; end_reason: string }>('SELECT status, end_reason FROM sessions WHERE id = $1', [session.id]);
    expect(row).toEqual({ status: 'failed', end_reason: 'server_shutdown' });
  } finally {
    await db.close();
  }
});
