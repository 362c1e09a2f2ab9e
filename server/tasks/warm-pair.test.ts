// The warm pair (warm-pair.ts) on a real server, real Chromium, the real sandbox: a run the
// pool's browser serves starts on the pair (its session a real one, with its row and its
// end, billed from its creation, not from the reservation); a run the pair does not serve
// leaves it waiting; a pair whose sandbox dies is ended whole; and once the server is
// closed nothing of any pair is left, no process and no directory.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { browsersDirFor } from '../browser/roots.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, eventually, leftovers, processesUnder, roots, sessionEvents, sessionRow } from '../sessions/test-support.js';
import { call, deployedTask, TITLE_TASK, until } from './test-support.js';

const NO_RECORDING = { recording: { active: false } };

/** Live processes of this file's sandboxes: their command line or mounts name its temporary root. */
function sandboxProcesses(root: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        if (/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;
        return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(`${root}/sbx-`);
      } catch {
        return false;
      }
    });
}

describe('task runs on a warm pair', () => {
  let t: TestServer;
  let fixtures: FixtureServer;
  let root: string;
  let browsersDir: string;
  const logs: string[] = [];
  const lines = () => logs.map((l) => JSON.parse(l) as Record<string, any>);
  const readyPairs = () => lines().filter((l) => l.msg === 'warm pair ready').length;
  const ended = (executionId: string) => lines().find((l) => l.msg === 'task run ended' && l.executionId === executionId);

  beforeAll(async () => {
    // Everything of the server's (DATA_DIR, browser roots, sandboxes) under a root of this
    // file's own: what is left there after close is a leak.
    // Short: the server refuses a TMPDIR over 17 characters (Chromium's socket paths).
    root = mkdtempSync(join(tmpdir(), 'wp'));
    chmodSync(root, 0o711);
    vi.stubEnv('TMPDIR', root);
    fixtures = await startFixtureServer();
    t = await startTestServer({
      env: { BROWSER_POOL_SIZE: '1', SANDBOX_WARM: '1', TASK_CONCURRENCY: '1', MAX_CONCURRENT_BROWSERS: '4', LOG_LEVEL: 'debug' },
      logs,
    });
    browsersDir = browsersDirFor(t.dataDir);
  }, 60_000);
  afterAll(async () => {
    // As it was, or unset if it was: a plain assignment of undefined sets the string 'undefined'.
    vi.unstubAllEnvs();
    await t?.close();
    await fixtures?.close();
    rmSync(root, { recursive: true, force: true });
  });

  async function run(taskId: string, body: Record<string, unknown> = {}) {
    const res = await call(t, 'POST', `/v2/tasks/${taskId}/run`, { input_params: { url: `${fixtures.url}/site/form.html` }, ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const done = await until(
      async () => (await call(t, 'GET', `/v2/tasks/runs/${res.body.run_id}/status`)).body,
      (s) => !['queued', 'running'].includes(s.status),
      60_000,
    );
    const [execution] = await t.db.query<{ id: string }>('SELECT id FROM task_executions WHERE run_id = $1', [res.body.run_id]);
    const log = (await eventually(() => ended(execution!.id), 10_000, 'the run ended log'))!;
    return { ...done, warmPair: log.warmPair as boolean };
  }

  it('runs on the pair: its browser becomes a real session, billed from its creation, ended with the run', { timeout: 120_000 }, async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    // The first run of an idle server has no pair; it builds the next.
    const first = await run(taskId);
    expect(first).toMatchObject({ status: 'success', result: { title: 'Form fixture' }, warmPair: false });
    await eventually(() => readyPairs() >= 1, 30_000, 'a warm pair');

    const asked = new Date();
    const warm = await run(taskId);
    expect(warm).toMatchObject({ status: 'success', result: { title: 'Form fixture' }, warmPair: true });
    const session = await sessionRow(t.db, warm.session_id);
    expect(session).toMatchObject({ status: 'completed' });
    // Billed from the session's creation, which is the run's, not the pair's reservation.
    expect(new Date(session!.created_at).getTime()).toBeGreaterThanOrEqual(asked.getTime() - 5);
    expect(Number(session!.credits_used)).toBeGreaterThan(0);
    expect(await sessionEvents(t.db, warm.session_id)).toHaveLength(1);
    // Its browser is gone with the session.
    await eventually(() => !roots(browsersDir).some((r) => r.owner.sessionId === warm.session_id), 10_000, 'the session root removed');
  });

  it('leaves the pair waiting for a run it does not serve (a run in a given session)', { timeout: 120_000 }, async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    await eventually(() => readyPairs() >= 2, 30_000, 'the next warm pair');
    const pairs = readyPairs();
    const given = await createSession(t, { session: { recording: { active: false } } });
    const inGiven = await run(taskId, { session_id: given.id, cleanup_sessions: false });
    expect(inGiven).toMatchObject({ status: 'success', session_id: given.id, warmPair: false });
    await call(t, 'DELETE', `/v1/sessions/${given.id}`);
    // The same pair serves the next run: none was built in between.
    const warm = await run(taskId);
    expect(warm).toMatchObject({ status: 'success', result: { title: 'Form fixture' }, warmPair: true });
    expect(readyPairs()).toBeGreaterThanOrEqual(pairs);
  });

  it('ends the whole pair when its sandbox dies, and runs go on', { timeout: 120_000 }, async () => {
    const taskId = await deployedTask(t, TITLE_TASK, NO_RECORDING);
    await eventually(() => readyPairs() >= 3, 30_000, 'the next warm pair');
    // Browsers not serving a session: the pool's and the pair's.
    const unowned = () => roots(browsersDir).filter((r) => r.owner.sessionId === null);
    await eventually(() => unowned().length === 2, 30_000, 'the pool refilled beside the pair');
    const before = unowned();
    // The pair's sandbox (and the sandbox's warm child) killed from outside.
    for (const pid of sandboxProcesses(root)) process.kill(pid, 'SIGKILL');
    // The reserved browser is ended: one of the two roots goes, with its processes.
    await eventually(() => before.some((r) => !unowned().some((u) => u.dir === r.dir)), 15_000, "the pair's browser ended");
    const endedRoot = before.find((r) => !unowned().some((u) => u.dir === r.dir))!;
    await eventually(() => leftovers(endedRoot.owner).length === 0, 10_000, "the pair's browser processes gone");
    const after = await run(taskId);
    expect(after).toMatchObject({ status: 'success', result: { title: 'Form fixture' }, warmPair: false });
  });

  it('leaves nothing of a waiting pair once the server is closed', { timeout: 120_000 }, async () => {
    await eventually(() => readyPairs() >= 4, 30_000, 'a warm pair');
    await t.close();
    expect(sandboxProcesses(root)).toEqual([]);
    expect(processesUnder(browsersDir)).toEqual([]);
    expect(readdirSync(root)).toEqual([]);
  });
});
