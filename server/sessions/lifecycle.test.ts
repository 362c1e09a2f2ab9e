// How sessions end without a DELETE or a time-out: a graceful server close, a DELETE while
// the browser is still starting. Every end path leaves no Chromium, no Xvfb and no root.
// idle_timeout and max_duration (whole minutes of waiting) are in timeouts.test.ts.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isRunning } from '../browser/procfs.js';
import { openDb } from '../store/db.js';
import { startTestServer } from '../testing/harness.js';
import {
  HEADLESS,
  browsersDirFor,
  createSession,
  endSession,
  entries,
  eventually,
  getSession,
  postSession,
  processesUnder,
  roots,
  rootOf,
  sessionEvents,
  sessionRow,
} from './test-support.js';

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
      const row = await eventually(
        async () => {
          const [r] = await server.db.query<{ id: string; status: string }>(`SELECT id, status FROM sessions WHERE status = 'starting'`);
          return r;
        },
        10_000,
        'the session row',
      );
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
