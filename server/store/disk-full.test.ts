// PGlite on a full disk: DATA_DIR on a small tmpfs of the test's own (mounting needs root;
// otherwise the test is skipped with the reason), filled to the last block. A write then
// fails inside PGlite with disk_full (53100): the request answers 503 with the general error
// body naming the full disk, the log says so, reads still answer, and once space is freed
// the same write succeeds in the same process, without a restart. A session DELETEd
// meanwhile answers 503 at once, loses its browser, and its end is recorded (once, with its
// event and charge) when space is freed.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, until } from '../batches/test-support.js';
import { browsersDirFor, createSession, HEADLESS, roots, sessionEvents } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';

/** Mounts a tmpfs of `size` at a new directory, or answers why it cannot. */
function mountTmpfs(size: string): { dir: string } | { skip: string } {
  if (process.getuid?.() !== 0) return { skip: 'mounting a tmpfs needs root' };
  const dir = mkdtempSync(join(tmpdir(), 'cb-disk-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    return { dir };
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return { skip: `mount -t tmpfs failed: ${(err as { stderr?: Buffer }).stderr?.toString().trim() || (err as Error).message}` };
  }
}

const mounted = mountTmpfs('160m');
if ('skip' in mounted) console.log(`disk-full.test.ts skipped: ${mounted.skip}`);

describe.skipIf('skip' in mounted)('PGlite on a full disk', () => {
  const dir = 'dir' in mounted ? mounted.dir : '';
  const filler = join(dir, 'filler');
  let server: TestServer;
  const logs: string[] = [];

  beforeAll(async () => {
    server = await startTestServer({ env: { DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'info' }, logs });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    if (!dir) return;
    execFileSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('answers 503 naming the full disk, logs it, and writes again once space is freed', async () => {
    const task = { name: 'disk-full-probe', language: 'typescript' };
    const session = await createSession(server, HEADLESS);
    const browsersDir = browsersDirFor(server.config.dataDir);
    // The filesystem full to the last block: a write that needs a new block fails.
    const free = () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    };
    writeFileSync(filler, Buffer.alloc(free()));
    expect(free()).toBe(0);

    const refused = await call(server, 'POST', '/v1/task', task);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body).toEqual({ error: { code: 503, message: expect.stringMatching(/disk is full/) } });
    expect(logs.some((l) => l.includes('database disk is full'))).toBe(true);
    // Reads need no space.
    expect((await call(server, 'GET', '/v1/task')).status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    // Its end cannot be written: 503 at once, the browser goes all the same.
    const started = Date.now();
    const ended = await call(server, 'DELETE', `/v1/sessions/${session.id}`);
    expect([ended.status, ended.body.error?.message], JSON.stringify(ended.body)).toEqual([503, expect.stringMatching(/disk is full/)]);
    expect(Date.now() - started).toBeLessThan(15_000);
    await until(
      async () => roots(browsersDir).some((r) => r.owner.sessionId === session.id),
      (left) => !left,
      15_000,
      100,
    );
    expect((await call(server, 'GET', `/v1/sessions/${session.id}`)).body.data.status).toBe('running');

    rmSync(filler);
    // The end is recorded once space is freed, once, as the DELETE asked: ended and deleted.
    await until(
      () => call(server, 'GET', `/v1/sessions/${session.id}`),
      (r) => r.status === 404 || r.body.data?.status !== 'running',
      15_000,
      100,
    );
    expect((await sessionEvents(server.db, session.id)).map((e) => e.type)).toEqual(['session.completed']);
    const [charged] = await server.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM usage_ledger WHERE session_id = $1`, [session.id]);
    expect(charged.n).toBeLessThanOrEqual(1);
    const [row] = await server.db.query<{ status: string; end_reason: string; deleted: boolean }>(
      'SELECT status, end_reason, deleted_at IS NOT NULL AS deleted FROM sessions WHERE id = $1',
      [session.id],
    );
    expect(row).toEqual({ status: 'completed', end_reason: 'api', deleted: true });
    expect((await call(server, 'DELETE', `/v1/sessions/${session.id}`)).status).toBe(404);
    const made = await call(server, 'POST', '/v1/task', task);
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const listed = await call(server, 'GET', '/v1/task');
    expect(JSON.stringify(listed.body)).toContain('disk-full-probe');
    expect(logs.some((l) => l.includes('database writes succeed again'))).toBe(true);
  }, 60_000);
});
