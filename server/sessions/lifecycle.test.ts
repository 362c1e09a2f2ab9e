// How sessions end without a DELETE: idle_timeout and max_duration (whole minutes, so one
// test waits about 65 s for both), a graceful server close, a DELETE while the browser is
// still starting. Every end path leaves no Chromium, no Xvfb and no root.
import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { isRunning } from '../browser/procfs.js';
import { openDb } from '../store/db.js';
import { startTestServer } from '../testing/harness.js';
import {
  HEADLESS,
  browsersDirFor,
  headless,
  createSession,
  endSession,
  entries,
  eventually,
  getSession,
  gone,
  postSession,
  processesUnder,
  roots,
  rootOf,
  sessionEvents,
  sessionRow,
} from './test-support.js';

describe('timeouts', () => {
  it('idle_timeout and max_duration end sessions as completed with the reason; CDP traffic defers idle_timeout; -1 disables both', async () => {
    const server = await startTestServer();
    const browsersDir = browsersDirFor(server.config.dataDir);
    try {
      // The limits count from each session's creation, between these two moments (three
      // launches side by side took seconds on a loaded machine).
      const askedAt = Date.now();
      const [idle, busy, forever] = await Promise.all([
        createSession(server, headless({ timeout: { idle_timeout: 1, max_duration: -1 } })),
        createSession(server, headless({ timeout: { idle_timeout: 1, max_duration: 1 } })),
        createSession(server, headless({ timeout: { idle_timeout: -1, max_duration: -1 } })),
      ]);
      const idleRoot = rootOf(browsersDir, idle.id);
      const busyRoot = rootOf(browsersDir, busy.id);
      const createdAt = Date.now();

      // A raw CDP client on `busy` sends a command every 5 s: never idle, so only
      // max_duration can end it.
      const ws = new WebSocket(busy.cdp_url);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      let n = 0;
      const keepBusy = setInterval(() => {
        if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ id: ++n, method: 'Browser.getVersion' }));
      }, 5_000);
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

      try {
        // Half-way, nothing has ended.
        await sleep(30_000);
        for (const s of [idle, busy, forever]) expect((await getSession(server, s.id)).body.data.status).toBe('running');

        const ended = async (id: string) => {
          const r = await getSession(server, id);
          return r.body.data.status !== 'running' ? r.body.data : undefined;
        };
        const [idleEnd, busyEnd] = await Promise.all([
          eventually(() => ended(idle.id), 45_000, 'the idle session to end'),
          eventually(() => ended(busy.id), 45_000, 'the busy session to end'),
        ]);
        expect(Date.now() - askedAt).toBeGreaterThanOrEqual(59_000);
        expect(Date.now() - createdAt).toBeLessThan(70_000);
        expect(idleEnd).toMatchObject({ status: 'completed', end_reason: 'idle_timeout' });
        expect(busyEnd).toMatchObject({ status: 'completed', end_reason: 'max_duration' });
        expect(busyEnd.steps).toBeGreaterThanOrEqual(10);
        // The connected client was dropped when its session ended.
        expect(await closed).toBe(1001);

        for (const [s, reason] of [[idle, 'idle_timeout'], [busy, 'max_duration']] as const) {
          const events = await sessionEvents(server.db, s.id);
          expect(events.map((e) => e.type)).toEqual(['session.completed']);
          expect(events[0]!.data).toMatchObject({ session_id: s.id, reason });
          expect(events[0]!.data.duration_ms).toBeGreaterThanOrEqual(59_000);
        }
        await eventually(() => [idleRoot, busyRoot].every((r) => !gone(r).directory && gone(r).processes.length === 0), 5_000, 'the roots to be removed');

        // -1 disables both limits.
        expect((await getSession(server, forever.id)).body.data.status).toBe('running');
      } finally {
        clearInterval(keepBusy);
        ws.terminate();
      }
      await endSession(server, forever.id);
      // A session ended by a timeout is still addressable until deleted.
      expect((await getSession(server, idle.id)).status).toBe(200);
      expect((await endSession(server, idle.id)).status).toBe(200);
    } finally {
      await server.close();
    }
    expect(processesUnder(browsersDir)).toEqual([]);
  }, 120_000);
});

describe('server close', () => {
  it('a graceful close ends every session (headful and headless, and one still starting) as failed and leaves no browser, Xvfb or root', async () => {
    // A DATA_DIR of our own, to read the database after the server is gone.
    const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-close-'));
    const server = await startTestServer({ env: { DATA_DIR: dataDir } });
    const browsersDir = browsersDirFor(server.config.dataDir);
    try {
      const headful = await createSession(server, {});
      const headless = await createSession(server, HEADLESS);
      // Chromium and Xvfb of the headful session (Xvfb's display number may be taken at once
      // by another test's Xvfb, so its socket file says nothing of ours).
      const headfulPids = rootOf(browsersDir, headful.id).owner.pids;
      expect(headfulPids).toHaveLength(2);
      // A third one whose browser is being launched when the server closes.
      const late = postSession(server, {}).catch((err: Error) => ({ status: 0, body: err.message, headers: new Headers() }));
      await eventually(() => roots(browsersDir).length === 3, 10_000, 'the third launch to begin');
      await server.close();
      const answer = await late;
      expect([0, 500]).toContain(answer.status);

      expect(processesUnder(browsersDir)).toEqual([]);
      expect(existsSync(browsersDir)).toBe(false); // roots and the directory itself
      for (const pid of headfulPids) expect(isRunning(pid), `process ${pid}`).toBe(false);

      const db = await openDb({ dataDir });
      try {
        const rows = await db.query<{ id: string; status: string; end_reason: string }>('SELECT id, status, end_reason FROM sessions ORDER BY created_at');
        expect(rows).toHaveLength(3);
        for (const row of rows) {
          expect(row).toMatchObject({ status: 'failed', end_reason: 'server_shutdown' });
          const events = await sessionEvents(db, row.id);
          expect(events.map((e) => [e.type, e.data.reason])).toEqual([['session.failed', 'server_shutdown']]);
        }
        expect(rows.map((r) => r.id).slice(0, 2)).toEqual([headful.id, headless.id]);
      } finally {
        await db.close();
      }
    } finally {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('DELETE while starting', () => {
  it('ends a session whose browser is still launching: the launch is abandoned, nothing is left, the creation answers an ended session', async () => {
    const server = await startTestServer();
    const browsersDir = browsersDirFor(server.config.dataDir);
    try {
      const creating = postSession(server, {}); // headful, cold: a second or two
      const row = await eventually(async () => {
        const [r] = await server.db.query<{ id: string; status: string }>(`SELECT id, status FROM sessions WHERE status = 'starting'`);
        return r;
      }, 10_000, 'the session row');
      // Its browser is being launched: the root exists, Chromium may be starting.
      await eventually(() => roots(browsersDir).some((r) => r.owner.sessionId === row.id), 10_000, 'the launch to begin');
      const deleted = await endSession(server, row.id);
      expect(deleted.status).toBe(200);
      expect(await deleted.json()).toEqual({ data: { status: 'completed' } });

      const answer = await creating;
      expect(answer.status).toBe(200);
      expect(answer.body.data.id).toBe(row.id);
      expect((await getSession(server, row.id)).status).toBe(404);
      expect(await sessionRow(server.db, row.id)).toMatchObject({ status: 'completed', end_reason: 'api' });
      expect((await sessionEvents(server.db, row.id)).map((e) => e.type)).toEqual(['session.completed']);
      await eventually(() => processesUnder(browsersDir).length === 0 && entries(browsersDir).length === 0, 10_000, 'nothing left');

      // The server goes on serving sessions.
      const next = await createSession(server, HEADLESS);
      await endSession(server, next.id);
    } finally {
      await server.close();
    }
  });
});
