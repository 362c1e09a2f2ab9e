// Node failure with real processes (node --import tsx server/main.ts) on one
// PostgreSQL schema: three nodes, each its own DATA_DIR, one SECRETS_KEY. Node B is killed
// with SIGKILL under load: while it runs sessions, a task run and its part of a batch of 30
// spread over the three nodes (headless, recording off). The survivors A and C race to claim
// it dead (one wins: every event exactly once), fail its sessions with browser_pod_not_found,
// fail its task run, settle its batch items (the ones it had not made go back to the queue
// and the survivors make them); the batch ends with its counts adding up to 30, every
// session of it has its one end event delivered, and once the survivors' sessions end
// nothing of them is left on their machines. B's restart with the same NODE_ID sweeps its
// orphaned browsers and finds nothing more to fail. A node's other ends (its database
// connection gone, a drain) are in lifecycle.test.ts.
// Needs DATABASE_URL (a cluster needs PostgreSQL); skipped with a printed reason without it.
import { randomBytes } from 'node:crypto';
import type { ChildServer } from '../testing/child-server.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browsersDirFor, processesUnder, roots } from '../sessions/test-support.js';
import { call, until } from '../batches/test-support.js';
import { b64 } from '../tasks/test-support.js';
import { NODE_SESSION as SESSION, openNodeFixture, type NodeFixture } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/cluster.test.ts skipped: several nodes need PostgreSQL, and DATABASE_URL is not set');

const run = randomBytes(3).toString('hex');
// Short, so that a death is seen quickly; not shorter: on a loaded 2-core machine a live node's
// heartbeat came over 3 s late, and the survivors claimed it dead while it still ran.
const DEAD_AFTER_SECONDS = 6;
// The task's own code (the user's program, in the sandbox): a run still going when the test acts.
const SLOW_TASK = `export default async function run(ctx: any) {
  await new Promise((r) => setTimeout(r, 120000));
  return 'late';
}
`;

describe.skipIf(!databaseUrl)('a cluster of nodes on PostgreSQL', () => {
  let f: NodeFixture;
  let sql: NodeFixture['sql'];
  beforeAll(async () => {
    f = await openNodeFixture(databaseUrl!, DEAD_AFTER_SECONDS);
    sql = f.sql;
  });
  afterAll(async () => {
    await f?.close();
  });

  const node = (id: string, dataDir: string, env?: Record<string, string>): Promise<ChildServer> => f.node(id, dataDir, env);
  const subscribe = (s: ChildServer) => f.subscribe(s);
  const dir = (name: string) => f.dir(name);
  const nodes = (s: ChildServer) => f.nodes(s);
  const events = () => f.events();
  const ofSession = (id: string) => f.ofSession(id);

  it(
    'a node killed with SIGKILL under a batch of 30: the survivors fail its work once, the batch adds up, no event is lost, and its restart sweeps its browsers',
    { timeout: 300_000 },
    async () => {
      const idA = `a-${run}`;
      const idB = `b-${run}`;
      const idC = `c-${run}`;
      const dirB = dir('b');
      // B first, alone: the task run is claimed there.
      const b = await node(idB, dirB);
      await subscribe(b);
      const task = await call(b, 'POST', '/v1/task', { name: `t-${run}`, language: 'typescript', code: b64(SLOW_TASK) });
      expect(task.status, JSON.stringify(task.body)).toBe(200);
      const deployed = await call(b, 'POST', `/v1/task/${task.body.data.id}/deploy`, { browserConfiguration: { recording: { active: false } } });
      expect(deployed.status, JSON.stringify(deployed.body)).toBe(200);
      const started = await call(b, 'POST', `/v2/tasks/${task.body.data.id}/run`, { input_params: {} });
      expect(started.status, JSON.stringify(started.body)).toBe(200);
      const taskRun = started.body;
      const running = await until(
        () => call(b, 'GET', `/v2/tasks/runs/${taskRun.run_id}/status`).then((r) => r.body),
        (s) => s.status === 'running' && !!s.session_id,
        60_000,
      );

      const onB: string[] = [];
      for (let i = 0; i < 1; i++) {
        const r = await call(b, 'POST', '/v1/sessions', SESSION);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        onB.push(r.body.data.id);
      }
      const dirA = dir('a');
      const dirC = dir('c');
      const [a, c] = await Promise.all([node(idA, dirA), node(idC, dirC)]);
      // Polled: on a loaded machine a node's heartbeat may come late for a moment.
      await until(
        async () => (await nodes(a)).filter((n) => [idA, idB, idC].includes(n.id)).map((n) => n.status),
        (l) => l.join() === 'alive,alive,alive',
        20_000,
        200,
      );
      const health = await (await fetch(`${a.url}/healthz`)).json();
      expect(health).toMatchObject({ status: 'ok', cluster: { node_id: idA, live_nodes: 3, draining: false } });

      // A batch of 30 over the three nodes; B is killed under load: once it has made three of
      // its items and each survivor one, while items are still being made.
      const BATCH = 30;
      const batch = await call(a, 'POST', '/v1/batch-sessions', { count: BATCH, configuration: SESSION });
      expect(batch.status, JSON.stringify(batch.body)).toBe(200);
      const batchId = batch.body.data.batch_id as string;
      // Made (completed) by each node, and, should the wait time out, what each holds otherwise.
      const madeBy = async () => {
        const rows = (
          await sql.query(`SELECT claimed_by, status, count(*)::int AS n FROM batch_items WHERE batch_id = $1 GROUP BY claimed_by, status`, [batchId])
        ).rows;
        const made: Record<string, number> = {};
        const other: Record<string, number> = {};
        for (const r of rows) {
          if (r.status === 'completed') made[r.claimed_by] = r.n;
          else other[`${r.claimed_by} ${r.status}`] = r.n;
        }
        return { made, other };
      };
      const { made: atKill } = await until(madeBy, ({ made: m }) => (m[idB] ?? 0) >= 3 && (m[idA] ?? 0) >= 1 && (m[idC] ?? 0) >= 1, 120_000, 100);
      const made = Object.values(atKill).reduce((t, n) => t + n, 0);
      console.log(`B killed with the batch's items made so far: ${JSON.stringify(atKill)}`);
      expect(made).toBeLessThan(BATCH);
      expect(processesUnder(browsersDirFor(dirB)).length).toBeGreaterThan(0);
      b.child.kill('SIGKILL');
      await b.exited;
      const killedAt = Date.now();

      // Every session B ran fails with browser_pod_not_found within the limit and a tick.
      const ofB = async () => (await sql.query(`SELECT id, status, end_reason, credits_used FROM sessions WHERE node_id = $1`, [idB])).rows;
      const ended = await until(ofB, (rows) => rows.every((r) => r.status === 'failed'), 20_000, 100);
      const tookMs = Date.now() - killedAt;
      console.log(`node B's ${ended.length} sessions failed ${tookMs} ms after its kill (NODE_DEAD_AFTER_SECONDS=${DEAD_AFTER_SECONDS})`);
      expect(tookMs).toBeLessThan(DEAD_AFTER_SECONDS * 1000 + 3_000);
      for (const r of ended) expect(r.end_reason).toBe('browser_pod_not_found');
      expect(ended.map((r) => r.id)).toEqual(expect.arrayContaining([...onB, running.session_id]));

      // The task run fails once; the batch still ends with counts that add up.
      const failedRun = await until(
        () => call(a, 'GET', `/v2/tasks/runs/${taskRun.run_id}/status`).then((r) => r.body),
        (s) => s.status !== 'running',
        20_000,
      );
      expect(failedRun.status).toBe('failure');
      const done = await until(
        () => call(a, 'GET', `/v1/batch-sessions/${batchId}`).then((r) => r.body.data),
        (d) => d.status !== 'pending',
        120_000,
      );
      console.log(`the batch ended ${done.status}: ${done.completed_requests} completed, ${done.failed_requests} failed`);
      expect(done.completed_requests + done.failed_requests).toBe(BATCH);
      expect(done.sessions.filter((s: { status: string }) => s.status === 'completed' || s.status === 'failed')).toHaveLength(BATCH);
      // Spread over the three nodes; B's items that it had not made were made by the survivors.
      const batchSessions = (await sql.query(`SELECT id, node_id, status FROM sessions WHERE batch_id = $1`, [batchId])).rows as {
        id: string;
        node_id: string;
        status: string;
      }[];
      expect(new Set(batchSessions.map((r) => r.node_id))).toEqual(new Set([idA, idB, idC]));
      expect(batchSessions.filter((r) => r.node_id === idB).every((r) => r.status === 'failed')).toBe(true);
      // The survivors' sessions end through A; every session of the batch then has its end
      // event: session.failed for B's, session.completed for the others.
      expect((await call(a, 'DELETE', '/v1/sessions/all')).status).toBe(200);
      await until(
        async () => batchSessions.filter((r) => ofSession(r.id).length === 0).map((r) => r.id),
        (l) => l.length === 0,
        60_000,
      );
      // Nothing of the survivors' sessions is left on their machines.
      for (const d of [dirA, dirC]) {
        await until(
          async () => [processesUnder(browsersDirFor(d)).length, roots(browsersDirFor(d)).length],
          ([p, r]) => p === 0 && r === 0,
          30_000,
        );
      }

      // Exactly one session.failed per session of B, one task.failed, one batch end: the two
      // survivors raced, one claimed.
      await until(
        async () => ended.map((r) => ofSession(r.id).length),
        (l) => l.every((n) => n >= 1),
        30_000,
      );
      await until(
        async () => events().filter((e) => e.data.run_id === taskRun.run_id),
        (l) => l.length >= 1,
        30_000,
      );
      await until(
        async () => events().filter((e) => e.data.batch_id === batchId),
        (l) => l.length >= 1,
        30_000,
      );
      const [dead] = (await sql.query(`SELECT dead_at, swept_at FROM nodes WHERE id = $1`, [idB])).rows;
      expect(dead.dead_at).not.toBeNull();
      expect(dead.swept_at).not.toBeNull();
      expect((await nodes(c)).find((n) => n.id === idB)?.status).toBe('dead');

      // B's browsers are its machine's business: they exit with B's DevTools pipes, and B's
      // restart with the same NODE_ID sweeps their roots, and fails nothing a second time.
      await until(
        async () => processesUnder(browsersDirFor(dirB)),
        (l) => l.length === 0,
        15_000,
      );
      expect(roots(browsersDirFor(dirB)).length).toBeGreaterThan(0);
      const b2 = await node(idB, dirB);
      expect(roots(browsersDirFor(dirB))).toEqual([]);
      // Alive again (polled: on this loaded machine a start may starve its first heartbeats).
      await until(
        async () => (await nodes(a)).find((n) => n.id === idB)?.status,
        (st) => st === 'alive',
        20_000,
        200,
      );
      // Negative: B back does not end its old sessions again; a window a second event would fall in.
      await new Promise((r) => setTimeout(r, 1_500));
      for (const r of ended) {
        expect(
          ofSession(r.id).map((e) => e.type),
          r.id,
        ).toEqual(['session.failed']);
        expect(ofSession(r.id)[0].data.reason).toBe('browser_pod_not_found');
        // Credits settled once: one charge at most, and the session's row carries it.
        const charges = (await sql.query(`SELECT credits FROM usage_ledger WHERE session_id = $1`, [r.id])).rows;
        expect(charges.length).toBeLessThanOrEqual(1);
        expect(Number(r.credits_used)).toBe(charges.reduce((t, c) => t + Number(c.credits), 0));
      }
      expect(
        events()
          .filter((e) => e.data.run_id === taskRun.run_id)
          .map((e) => e.type),
      ).toEqual(['task.failed']);
      expect(events().filter((e) => e.data.batch_id === batchId)).toHaveLength(1);
      const finals = (await sql.query(`SELECT id, node_id, status FROM sessions WHERE batch_id = $1`, [batchId])).rows as {
        id: string;
        node_id: string;
        status: string;
      }[];
      expect(finals.filter((r) => r.node_id !== idB).map((r) => r.status)).toContain('completed');
      for (const r of finals)
        expect(
          ofSession(r.id).map((e) => e.type),
          `${r.id} on ${r.node_id}`,
        ).toEqual([r.status === 'failed' ? 'session.failed' : 'session.completed']);
      for (const s of [a, b2, c]) {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    },
  );
});
