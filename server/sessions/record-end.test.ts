// Sessions ending together: recordEnds ends each once, settles its credits and writes its
// event, in one transaction per hundred; a session that had already ended is left alone.
// EndRecorder gathers ends asked for one by one at the same moment into those transactions.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { createProject, insertWebhook, openTestDb, type TestDb } from '../events/test-support.js';
import { createSignals } from '../capability/index.js';
import { EndRecorder, recordEnds } from './record-end.js';
import { insertSession, markRunning } from './store.js';

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t?.close();
});

const config = { ...loadConfig({}), publicUrl: 'http://127.0.0.1:3000' };
/** This test's own signals, as a server's: the ends recorded here are announced on them. */
const signals = createSignals();

async function newSession(projectId: string): Promise<string> {
  const id = randomUUID();
  await insertSession(t.db, { id, projectId, nodeId: 'n1', configuration: {} as never, tags: [], cdpToken: randomUUID(), liveViewToken: randomUUID() });
  await markRunning(t.db, id);
  return id;
}

describe('recordEnds', () => {
  it('ends many sessions at once: each row, its charge and its event once, deliveries queued in order', async () => {
    const project = await createProject(t.db);
    const wh = await insertWebhook(t.db, project, 'http://127.0.0.1:9/', ['session.failed', 'session.completed']);
    const ids = await Promise.all(Array.from({ length: 150 }, () => newSession(project)));
    // One already ended by another path: recordEnds leaves it (and its single event) alone.
    await recordEnds({ db: t.db, config, signals }, [{ id: ids[3], status: 'completed', reason: 'api', deleted: true }]);
    const rows = await recordEnds(
      { db: t.db, config, signals },
      ids.map((id) => ({ id, status: 'failed' as const, reason: 'browser_pod_not_found' as const })),
    );
    expect(rows).toHaveLength(150);
    expect(rows[3]).toBeUndefined();
    rows.forEach((r, i) => i !== 3 && expect(r).toMatchObject({ id: ids[i], status: 'failed', end_reason: 'browser_pod_not_found' }));
    const events = await t.db.query<{ type: string; session_id: string }>(
      `SELECT e.type, e.data->>'session_id' AS session_id FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
        WHERE d.webhook_id = $1 ORDER BY d.seq`,
      [wh.id],
    );
    expect(events.map((e) => e.session_id)).toEqual([ids[3], ...ids.filter((_, i) => i !== 3)]);
    expect(events.map((e) => e.type)).toEqual(['session.completed', ...Array(149).fill('session.failed')]);
    // Each settled once: one charge per session (each ran a little, so each costs something).
    const [{ n }] = await t.db.query<{ n: number }>(
      `SELECT count(DISTINCT session_id)::int AS n FROM usage_ledger WHERE project_id = $1 AND kind = 'session'`,
      [project],
    );
    expect(n).toBe(150);
    // Again: nothing more is ended or emitted.
    expect(
      (
        await recordEnds(
          { db: t.db, config, signals },
          ids.map((id) => ({ id, status: 'failed' as const, reason: 'browser_pod_not_found' as const })),
        )
      ).every((r) => r === undefined),
    ).toBe(true);
    const [{ m }] = await t.db.query<{ m: number }>(`SELECT count(*)::int AS m FROM events WHERE project_id = $1`, [project]);
    expect(m).toBe(150);
  });

  it('announces an end once it is committed, with its settled credits, and not again', async () => {
    const project = await createProject(t.db);
    const [id, other] = [await newSession(project), await newSession(project)];
    const heard: { id: string; credits: number | null; committed: string | undefined }[] = [];
    const reads: Promise<unknown>[] = [];
    const listen = (sessionId: string) =>
      signals.endRecorded.on(sessionId, (row) => {
        // Read on another statement: the end is visible, so it was committed.
        reads.push(
          t.db
            .query<{ status: string }>('SELECT status FROM sessions WHERE id = $1', [sessionId])
            .then(([r]) => heard.push({ id: sessionId, credits: row.credits_used, committed: r?.status })),
        );
      });
    const stop = listen(id);
    const stopOther = listen(other);
    stopOther();
    const [row] = await recordEnds({ db: t.db, config, signals }, [
      { id, status: 'completed', reason: 'api' },
      { id: other, status: 'completed', reason: 'api' },
    ]);
    // Again, through an EndRecorder: already ended, so not announced again.
    await new EndRecorder({ db: t.db, config, signals }, () => false).record({ id, status: 'completed', reason: 'api' });
    stop();
    // Those reads may run on other connections (PostgreSQL): waited for, not raced.
    await Promise.all(reads);
    expect(heard).toEqual([{ id, credits: row!.credits_used, committed: 'completed' }]);
    const [{ credits_used }] = await t.db.query<{ credits_used: number }>('SELECT credits_used FROM sessions WHERE id = $1', [id]);
    expect(row!.credits_used).toBe(credits_used);
  });
});

describe('EndRecorder', () => {
  /** The test database, counting the transactions begun on it. */
  function counting(): { db: TestDb['db']; transactions: () => number } {
    let n = 0;
    const db = Object.create(t.db, {
      transaction: { value: (fn: never) => (n++, t.db.transaction(fn)) },
    }) as TestDb['db'];
    return { db, transactions: () => n };
  }

  it('commits ends asked for at the same moment together, each caller hearing its own row', async () => {
    const project = await createProject(t.db);
    const ids = await Promise.all(Array.from({ length: 60 }, () => newSession(project)));
    const { db, transactions } = counting();
    const recorder = new EndRecorder({ db, config, signals }, () => false);
    // A grouped end is announced like any other (a task run waits for its session's).
    const heard: string[] = [];
    const stop = signals.endRecorded.on(ids[30]!, (row) => heard.push(String(row.credits_used)));
    const rows = await Promise.all(
      ids.map((id, i) => recorder.record({ id, status: i % 2 ? 'completed' : 'failed', reason: i % 2 ? 'idle_timeout' : 'server_shutdown' })),
    );
    rows.forEach((r, i) =>
      expect(r).toMatchObject({ id: ids[i], status: i % 2 ? 'completed' : 'failed', end_reason: i % 2 ? 'idle_timeout' : 'server_shutdown' }),
    );
    // The first alone (nothing waited for it), the other 59 in the next.
    expect(transactions()).toBe(2);
    stop();
    expect(heard).toEqual([String(rows[30]!.credits_used)]);
    const [{ m }] = await t.db.query<{ m: number }>(`SELECT count(*)::int AS m FROM events WHERE project_id = $1`, [project]);
    expect(m).toBe(60);
    // Asked again: each once, so nothing more.
    expect(await Promise.all(ids.slice(0, 5).map((id) => recorder.record({ id, status: 'failed', reason: 'api' })))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('an end that fails does not fail the others committed with it', async () => {
    const project = await createProject(t.db);
    const ids = await Promise.all(Array.from({ length: 4 }, () => newSession(project)));
    const recorder = new EndRecorder({ db: t.db, config, signals }, () => false);
    const first = recorder.record({ id: ids[0], status: 'completed', reason: 'api' });
    // A byte count that is not a number: its statement fails, and with it its group's transaction.
    const broken = { networkBytes: Number.NaN, proxyBytes: 0, domains: [], steps: 0, screenshots: 0 };
    const results = await Promise.allSettled([
      first,
      ...[ids[1], ids[2], ids[3]].map((id) => recorder.record({ id, status: 'completed', reason: 'api', ...(id === ids[2] ? { usage: broken } : {}) })),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const [{ m }] = await t.db.query<{ m: number }>(`SELECT count(*)::int AS m FROM events WHERE project_id = $1`, [project]);
    expect(m).toBe(3);
  });
});
