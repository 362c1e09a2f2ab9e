// A node's ends other than a crash, with real processes (node --import tsx server/main.ts)
// on one PostgreSQL schema: a node whose database connection died is claimed dead at once, by
// its advisory lock, before its heartbeat is too old; and a drain: SIGTERM to a node with a
// running session refuses new sessions with 503 while the session finishes, and the node
// leaves the listing (not dead). A node killed under load is in cluster.test.ts.
// Needs DATABASE_URL (a cluster needs PostgreSQL); skipped with a printed reason without it.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, until } from '../batches/test-support.js';
import type { ChildServer } from '../testing/child-server.js';
import { NODE_SESSION as SESSION, openNodeFixture, type NodeFixture } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/lifecycle.test.ts skipped: several nodes need PostgreSQL, and DATABASE_URL is not set');

const run = randomBytes(3).toString('hex');
// The drain test's node; the lock test sets its own.
const DEAD_AFTER_SECONDS = 6;

describe.skipIf(!databaseUrl)('a cluster of nodes on PostgreSQL', () => {
  let f: NodeFixture;
  let sql: NodeFixture['sql'];
  let url: string;
  beforeAll(async () => {
    f = await openNodeFixture(databaseUrl!, DEAD_AFTER_SECONDS);
    sql = f.sql;
    url = f.url;
  });
  afterAll(async () => {
    await f?.close();
  });

  const node = (id: string, dataDir: string, env?: Record<string, string>): Promise<ChildServer> => f.node(id, dataDir, env);
  const subscribe = (s: ChildServer) => f.subscribe(s);
  const dir = (name: string) => f.dir(name);
  const nodes = (s: ChildServer) => f.nodes(s);
  const ofSession = (id: string) => f.ofSession(id);

  it('a node whose database connection died is claimed at once, by its advisory lock, before its heartbeat is too old', { timeout: 90_000 }, async () => {
    // The test plays node G: it holds G's advisory lock on a connection of its own and
    // heartbeats G's row, as a node does; F is a real node with NODE_DEAD_AFTER_SECONDS=10.
    const idF = `f-${run}`;
    const idG = `g-${run}`;
    const f = await node(idF, dir('f'), { NODE_DEAD_AFTER_SECONDS: '10' });
    const g = new pg.Client({ connectionString: url });
    await g.connect();
    const [{ ok }] = (await g.query(`SELECT pg_try_advisory_lock(hashtext('browser-service:node'), hashtext(current_schema() || '/' || $1)) AS ok`, [idG]))
      .rows;
    expect(ok).toBe(true);
    await g.query(`INSERT INTO nodes (id, version, capacity) VALUES ($1, 'test', 1)`, [idG]);
    const beat = () => g.query('UPDATE nodes SET heartbeat_at = now() WHERE id = $1', [idG]);
    const beating = setInterval(() => void beat().catch(() => {}), 1_000);
    // Alive with its lock held: F's looks leave it alone. F ticks every 2 s (a heartbeat, then
    // a look at the others' locks): waited for by its heartbeat moving three times, so that
    // at least two looks saw G's lock held and a third may be under way.
    const beats = new Set<number>();
    const heartbeatOfF = async () => (await sql.query<{ at: Date }>('SELECT heartbeat_at AS at FROM nodes WHERE id = $1', [idF])).rows[0].at.getTime();
    const first = await heartbeatOfF();
    await until(
      async () => beats.add(await heartbeatOfF()),
      (b) => [...b].filter((t) => t > first).length >= 3,
      20_000,
      100,
    );
    expect((await nodes(f)).find((n) => n.id === idG)?.status).toBe('alive');
    clearInterval(beating);
    await beat();
    await g.end(); // the connection goes, and G's lock with it
    const [row] = (
      await until(
        () => sql.query(`SELECT dead_at, heartbeat_at, extract(epoch FROM dead_at - heartbeat_at) AS silent FROM nodes WHERE id = $1`, [idG]),
        (r) => r.rows[0]?.dead_at !== null,
        20_000,
        100,
      )
    ).rows;
    console.log(`node G claimed dead ${Number(row.silent).toFixed(1)} s after its last heartbeat (NODE_DEAD_AFTER_SECONDS=10)`);
    expect(Number(row.silent)).toBeLessThan(10);
    f.child.kill('SIGTERM');
    await f.exited;
  });

  it('SIGTERM drains: new sessions answer 503, the running one finishes, the node leaves the listing', { timeout: 90_000 }, async () => {
    const idD = `d-${run}`;
    // Its log at debug: a drain that does not end says where it waits.
    const d = await node(idD, dir('d'), { SHUTDOWN_GRACE_SECONDS: '30', LOG_LEVEL: 'debug' });
    await subscribe(d);
    const created = await call(d, 'POST', '/v1/sessions', SESSION);
    expect(created.status).toBe(200);
    const sessionId = created.body.data.id as string;
    d.child.kill('SIGTERM');
    await until(
      async () => (await nodes(d)).find((n) => n.id === idD)?.status,
      (s) => s === 'draining',
      10_000,
      100,
    );
    const refused = await call(d, 'POST', '/v1/sessions', SESSION);
    expect(refused.status).toBe(503);
    expect(refused.body.error.message).toMatch(/draining/);
    expect((await fetch(`${d.url}/healthz`).then((r) => r.json())).cluster).toMatchObject({ node_id: idD, draining: true });
    // Its client finishes it through the draining node; the node then exits, well within the grace.
    expect((await call(d, 'DELETE', `/v1/sessions/${sessionId}`)).status).toBe(200);
    const exit = await Promise.race([d.exited, new Promise((r) => setTimeout(() => r('timeout'), 20_000))]);
    // Its last lines only: a failure's summary (pnpm test) shows a message's first six lines.
    expect(exit, `the node's last log lines:\n${d.log().trimEnd().split('\n').slice(-5).join('\n')}`).toMatchObject({ code: 0 });
    await until(
      async () => ofSession(sessionId),
      (l) => l.length >= 1,
      20_000,
    );
    expect(ofSession(sessionId).map((ev) => ev.type)).toEqual(['session.completed']);
    // It left the table: listed by no node, never dead.
    expect((await sql.query('SELECT id FROM nodes WHERE id = $1', [idD])).rows).toEqual([]);
  });
});
