// A rolling restart of a three-node cluster loses no event and no recording: sessions run
// with recording on (an S3-compatible store shared by the nodes) and a webhook subscribed;
// each node in turn gets SIGTERM (its drain: a session asked of it meanwhile is placed on
// another node; its own sessions are ended by their client, through the front, and the
// node then exits) and starts again with the same NODE_ID and address; then the next.
// Afterwards every session has its end event and its recording's event, each delivered
// once, and every recording is served by every node.
// Needs DATABASE_URL (a cluster needs PostgreSQL); skipped with a printed reason without it.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { call, until, type Requester } from '../batches/test-support.js';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { startTestCluster, type TestCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/rolling-restart.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');

const RECORDED = { browser: { headless: { active: true } }, session: { recording: { active: true } } };

describe.skipIf(!databaseUrl)('a rolling restart of three nodes', () => {
  let cluster: TestCluster;
  let s3: LocalS3;
  let receiver: Receiver;
  let site: FixtureServer;
  let db: pg.Client;
  const front: Requester = {
    request: (path, init = {}) =>
      fetch(cluster.front.url + path, { ...init, headers: { 'service-api-key': cluster.apiKey, ...(init.headers as Record<string, string>) } }),
  };
  const events = () => receiver.received.map((r) => JSON.parse(r.body) as { type: string; data: Record<string, any> });
  const ofSession = (id: string) => events().filter((e) => e.data.session_id === id && e.type.startsWith('session.'));

  beforeAll(async () => {
    [s3, receiver, site] = await Promise.all([startLocalS3(), startReceiver(), startFixtureServer()]);
    cluster = await startTestCluster({
      databaseUrl: databaseUrl!,
      count: 3,
      // The grace is a bound never reached: a drain ends once the node's sessions have, and
      // their client ends them once the creation the node forwarded meanwhile has answered
      // (a grace that ran out first would close the connection that creation is answered on).
      // Two a node, and room for the ones placed meanwhile.
      env: { ...(s3.env('rolling') as Record<string, string>), MAX_CONCURRENT_BROWSERS: '4', SHUTDOWN_GRACE_SECONDS: '120' },
    });
    db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
  }, 240_000);
  afterAll(async () => {
    await db?.end();
    await cluster?.close();
    await Promise.all([s3?.stop(), receiver?.close(), site?.close()]);
  }, 90_000);

  it('loses no event and no recording', async () => {
    const hook = await call(front, 'POST', '/v1/webhooks', {
      url: receiver.url,
      subscribed_events: ['session.completed', 'session.failed', 'session.recording.ready'],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    const nodeOf = async (id: string) => (await db.query<{ node_id: string }>('SELECT node_id FROM sessions WHERE id = $1', [id])).rows[0]?.node_id;
    /** A recorded session created through node i (placed there while it has room), on a page. */
    const session = async (i: number) => {
      const r = await call(cluster.nodes[i], 'POST', '/v1/sessions', RECORDED);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const id = r.body.data.id as string;
      // Through the front: the goto lands on any node and is forwarded to the owner.
      expect((await call(front, 'POST', `/v1/sessions/${id}/goto`, { url: `${site.url}/site/form.html` })).status).toBe(200);
      return id;
    };
    // Side by side: two a node, each with room for both.
    const ids: string[] = (await Promise.all([0, 1, 2].map((i) => Promise.all([session(i), session(i)])))).flat();
    expect(await Promise.all(ids.map(nodeOf))).toEqual(['node-a', 'node-a', 'node-b', 'node-b', 'node-c', 'node-c']);

    for (const i of [0, 1, 2]) {
      const n = cluster.nodes[i];
      const restarted = cluster.restart(i, { samePort: true });
      // While it drains, a session asked of it goes to a node that takes sessions.
      await until(
        () => fetch(`${n.url}/healthz`).then((r) => r.json() as Promise<{ cluster?: { draining: boolean } }>),
        (h) => h.cluster?.draining === true,
        10_000,
        50,
      );
      const placed = await call(n, 'POST', '/v1/sessions', RECORDED);
      expect(placed.status, JSON.stringify(placed.body)).toBe(200);
      expect(await nodeOf(placed.body.data.id)).not.toBe(n.id);
      ids.push(placed.body.data.id);
      // Its sessions' client ends them through the front (landing on any node, forwarded to
      // the draining owner); its drain is then over, and it restarts.
      const own = await db.query<{ id: string }>("SELECT id FROM sessions WHERE node_id = $1 AND status IN ('starting', 'running')", [n.id]);
      expect(own.rows.length).toBeGreaterThan(0);
      for (const { id } of own.rows) expect((await call(front, 'DELETE', `/v1/sessions/${id}`)).status, id).toBe(200);
      await restarted;
    }
    // Every node has restarted once, each with its id.
    const listed = await db.query<{ id: string }>('SELECT id FROM nodes WHERE dead_at IS NULL ORDER BY id');
    expect(listed.rows.map((r) => r.id)).toEqual(['node-a', 'node-b', 'node-c']);

    // What still runs ends through the front; then every session has ended.
    expect((await call(front, 'DELETE', '/v1/sessions/all')).status).toBe(200);
    const rows = await until(
      async () =>
        (await db.query<{ id: string; status: string; end_reason: string }>('SELECT id, status, end_reason FROM sessions WHERE id = ANY($1)', [ids])).rows,
      (r) => r.length === ids.length && r.every((s) => s.status === 'completed' || s.status === 'failed'),
      30_000,
    );
    console.log(`ends after the rolling restart: ${JSON.stringify(rows.map((r) => `${r.status}/${r.end_reason}`))}`);

    // Each session's end and its recording's event, delivered once (a moment more for any duplicate).
    await until(
      async () => ids.filter((id) => ofSession(id).length < 2),
      (l) => l.length === 0,
      90_000,
      250,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    for (const r of rows) {
      const end = r.status === 'failed' ? 'session.failed' : 'session.completed';
      expect(
        ofSession(r.id)
          .map((e) => e.type)
          .sort(),
        r.id,
      ).toEqual([end, 'session.recording.ready'].sort());
    }

    // Every recording is served by every node, from the shared store.
    for (const id of ids) {
      for (const n of cluster.nodes) {
        const video = await n.request(`/v1/sessions/${id}/recordings/primary/fetch`);
        expect(video.status, `${id} through ${n.id}`).toBe(200);
        expect(video.headers.get('content-type')).toBe('video/mp4');
        expect(
          Buffer.from(await video.arrayBuffer())
            .subarray(4, 8)
            .toString(),
        ).toBe('ftyp');
      }
    }
  }, 300_000);
});
