// How sessions end by their own limits: idle_timeout and max_duration end them as completed
// with the reason, CDP traffic defers idle_timeout, -1 disables both. A file of its own,
// beside lifecycle.test.ts: the contract's limits are whole minutes, so this test waits a
// real minute for the server's own timer while other files run beside it.
import { WebSocket } from 'ws';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../testing/harness.js';
import { browsersDirFor, headless, createSession, endSession, eventually, getSession, gone, processesUnder, rootOf, sessionEvents } from './test-support.js';

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
      // The answers it gets: six of them are half of the minute.
      let answered = 0;
      ws.on('message', (data) => {
        if ((JSON.parse(String(data)) as { id?: number }).id !== undefined) answered++;
      });
      const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));

      try {
        // Half-way (six commands answered, 30 s of traffic), nothing has ended.
        await eventually(() => answered >= 6, 45_000, 'six answers on the busy session');
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

        for (const [s, reason] of [
          [idle, 'idle_timeout'],
          [busy, 'max_duration'],
        ] as const) {
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
