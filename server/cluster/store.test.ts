// The nodes table's claims on PostgreSQL, where survivors race: of two claims of one dead
// node exactly one wins; a node whose advisory lock was free is claimed only while its
// heartbeat has not moved; a sweep left unfinished is taken again after its lease; a node
// that leaves with sessions unfinished stays for the reaper. PGlite runs the same SQL (a
// node alone), checked here too for the statements' syntax.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { urlWithSchema } from '../store/pg-schema.js';
import { backends } from '../testing/harness.js';
import { openTestPglite } from '../testing/pglite-template.js';
import pg from 'pg';
import * as store from './store.js';

describe.each(backends)('the nodes table on %s', (backend) => {
  let db: Db;
  let dropSchema: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (backend === 'postgres') {
      const schema = `test_nodes_${randomUUID().slice(0, 8)}`;
      const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await admin.connect();
      await admin.query(`CREATE SCHEMA ${schema}`);
      dropSchema = async () => {
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
        await admin.end();
      };
      db = await openDb({ databaseUrl: urlWithSchema(process.env.DATABASE_URL!, schema) });
    } else {
      db = await openTestPglite();
    }
    await migrate(db);
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await dropSchema?.();
  });

  const node = async (id: string, heartbeatSecondsAgo: number) => {
    await store.register(db, { id, internalUrl: undefined, version: 'test', capacity: 2 });
    await db.query(`UPDATE nodes SET heartbeat_at = now() - make_interval(secs => $2) WHERE id = $1`, [id, heartbeatSecondsAgo]);
  };

  it('lets exactly one of two racing survivors claim a node whose heartbeat is too old', async () => {
    await node('race-dead', 10);
    await node('race-fresh', 0);
    const [one, two] = await Promise.all([store.claimDead(db, 'survivor-1', 3, 30), store.claimDead(db, 'survivor-2', 3, 30)]);
    const claimed = [...one, ...two];
    expect(claimed.map((n) => n.id)).toEqual(['race-dead']);
    // Claimed, not yet swept: nobody takes it again before the sweep lease passes...
    expect(await store.claimDead(db, 'survivor-1', 3, 30)).toEqual([]);
    // ...after it (the survivor died mid-sweep), one does; once swept, none.
    await db.query(`UPDATE nodes SET dead_at = dead_at - interval '60 seconds' WHERE id = 'race-dead'`);
    const again = await store.claimDead(db, 'survivor-2', 3, 30);
    expect(again.map((n) => n.id)).toEqual(['race-dead']);
    await store.markSwept(db, again[0]!);
    await db.query(`UPDATE nodes SET dead_at = dead_at - interval '60 seconds' WHERE id = 'race-dead'`);
    expect(await store.claimDead(db, 'survivor-1', 3, 30)).toEqual([]);
    const [{ now }] = await db.query<{ now: Date }>('SELECT now() AS now');
    const rows = await store.allNodes(db);
    expect(rows.map((r) => [r.id, store.statusOf(r, now, 3)])).toEqual(
      expect.arrayContaining([
        ['race-dead', 'dead'],
        ['race-fresh', 'alive'],
      ]),
    );
    // Its restart with the same id makes it alive again.
    await store.register(db, { id: 'race-dead', internalUrl: undefined, version: 'test', capacity: 2 });
    expect((await store.liveNodes(db, 3)).map((n) => n.id)).toEqual(expect.arrayContaining(['race-dead', 'race-fresh']));
  });

  it('claims a silent node only while its heartbeat has not moved since its lock was seen free', async () => {
    await node('silent', 5);
    const [seen] = (await store.allNodes(db)).filter((n) => n.id === 'silent');
    await store.beat(db, 'silent', 0, false);
    expect(await store.claimSilent(db, 'silent', seen!.heartbeat_at)).toBeUndefined();
    const [now] = (await store.allNodes(db)).filter((n) => n.id === 'silent');
    const [a, b] = await Promise.all([store.claimSilent(db, 'silent', now!.heartbeat_at), store.claimSilent(db, 'silent', now!.heartbeat_at)]);
    expect([a, b].filter(Boolean)).toHaveLength(1);
    expect(await store.beat(db, 'silent', 0, false)).toEqual({ claimedDead: true });
  });

  it('lets a node leave only when none of its sessions is unfinished', async () => {
    await node('leaver', 0);
    const [{ id: projectId }] = await db
      .query<{ id: string }>('SELECT id FROM projects LIMIT 1')
      .then(async (r) => (r.length ? r : db.query<{ id: string }>(`INSERT INTO projects (id, name) VALUES ($1, 'p') RETURNING id`, [randomUUID()])));
    const sessionId = randomUUID();
    await db.query(
      `INSERT INTO sessions (id, project_id, node_id, status, configuration, tags, cdp_token, live_view_token) VALUES ($1, $2, 'leaver', 'running', '{}'::jsonb, '[]', 't', 'l')`,
      [sessionId, projectId],
    );
    expect(await store.leave(db, 'leaver')).toBe(false);
    await db.query(`UPDATE sessions SET status = 'completed', ended_at = now() WHERE id = $1`, [sessionId]);
    expect(await store.leave(db, 'leaver')).toBe(true);
    expect((await store.allNodes(db)).some((n) => n.id === 'leaver')).toBe(false);
    expect(await store.beat(db, 'leaver', 0, false)).toBeUndefined();
  });
});
