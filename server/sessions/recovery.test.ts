// The server process killed with SIGKILL while its sessions run: its browsers (Chromium,
// Xvfb) exit by themselves, and the next start on the same DATA_DIR removes their roots
// and marks their sessions failed with session.failed (the sweep of browsers that did not
// exit, hung ones, is sweep.test.ts's). Then a graceful stop (SIGTERM) of that second
// server leaves no browser either. Real processes: `node --import tsx server/main.ts`
// (not the tsx CLI, which runs the server in a child of its own that a SIGKILL would miss).
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDb } from '../store/db.js';
import { isRunning } from '../browser/procfs.js';
import { HEADLESS, browsersDirFor, createSession, eventually, getSession, gone, processesUnder, roots, rootOf, sessionEvents } from './test-support.js';
import { startChildServer } from '../testing/child-server.js';
import { xSocket } from '../browser/test-support.js';

const startChild = (dataDir: string, apiKey: string) => startChildServer({ dataDir, apiKey });

describe('recovery after kill -9', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-recovery-'));
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const children: ChildProcess[] = [];

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the next start kills what a killed server left, removes the roots and fails its sessions; a graceful stop leaves nothing', async () => {
    const browsersDir = browsersDirFor(dataDir);
    // The tools' browsers (web fetch) of the same installation live beside the sessions'.
    const everything = () => processesUnder(browsersDir);

    const first = await startChild(dataDir, apiKey);
    children.push(first.child);
    const headful = await createSession(first, {});
    const headless = await createSession(first, HEADLESS);
    const left = [rootOf(browsersDir, headful.id), rootOf(browsersDir, headless.id)];
    const display = left[0]!.owner.display!;
    expect(display).toMatch(/^:\d+$/);
    const socket = xSocket(display);
    expect(socket).not.toBeNull();
    // A web fetch starts a tool browser, in a root of its own beside the sessions'.
    const fetched = await first.request('/v1/tools/fetch/webpage', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${first.url}/healthz` }),
    });
    expect(fetched.status).toBe(200);
    const tool = roots(browsersDir).filter((r) => r.owner.sessionId === null);
    expect(tool).toHaveLength(1);
    left.push(tool[0]!);

    // Every browser process of the first server: its sessions' and its tools' (web fetch).
    const firstProcesses = everything();
    expect(firstProcesses.length).toBeGreaterThan(2);

    first.child.kill('SIGKILL');
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // The server is gone, and so are its browsers: each exits when the server's end closes
    // its DevTools pipe, and the headful one's Xvfb when its last client is gone. Their
    // roots stay for the next start.
    await eventually(() => firstProcesses.every((pid) => !isRunning(pid)), 15_000, "the killed server's browsers to exit");
    for (const root of left) expect(gone(root)).toEqual({ processes: [], directory: true });

    const second = await startChild(dataDir, apiKey);
    children.push(second.child);
    // By the time it answers, the sweep is done: nothing of the first server runs.
    for (const root of left) expect(gone(root)).toEqual({ processes: [], directory: false });
    expect(firstProcesses.filter((pid) => isRunning(pid))).toEqual([]);
    expect(processesUnder(browsersDir)).toEqual([]);
    expect(roots(browsersDir)).toEqual([]);
    // The killed Xvfb's socket is gone (one on the same number now is another Xvfb's).
    expect(xSocket(display)).not.toEqual(socket);
    expect(existsSync(`/tmp/.X${display.slice(1)}-lock`)).toBe(false);
    for (const s of [headful, headless]) {
      const record = await getSession(second, s.id);
      expect(record.status).toBe(200);
      expect(record.body.data).toMatchObject({ status: 'failed', end_reason: 'browser_pod_not_found' });
      expect(record.body.data.ended_at).not.toBeNull();
    }

    // The second server works, and a graceful stop (SIGTERM) leaves no browser.
    const third = await createSession(second, {});
    const thirdRoot = rootOf(browsersDir, third.id);
    expect(gone(thirdRoot).processes.length).toBeGreaterThan(0);
    second.child.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(gone(thirdRoot)).toEqual({ processes: [], directory: false });
    expect(everything()).toEqual([]);
    expect(existsSync(browsersDir)).toBe(false); // roots and the directory itself

    // What the database says, read once no server holds it.
    const db = await openDb({ dataDir });
    try {
      for (const s of [headful, headless]) {
        const events = await sessionEvents(db, s.id);
        expect(events.map((e) => e.type)).toEqual(['session.failed']);
        expect(events[0]!.data).toEqual({
          session_id: s.id,
          duration_ms: expect.any(Number),
          reason: 'browser_pod_not_found',
          session_dashboard_url: expect.any(String),
        });
      }
      const events = await sessionEvents(db, third.id);
      expect(events.map((e) => [e.type, e.data.reason])).toEqual([['session.failed', 'server_shutdown']]);
    } finally {
      await db.close();
    }
  }, 120_000);
});
