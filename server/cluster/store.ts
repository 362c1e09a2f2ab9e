// The `nodes` table (migration 025): who is in the cluster, where they answer, whether they
// are alive. Plain SQL over Db, so both backends run it; only PostgreSQL serves several nodes.
import type { Db } from '../store/db.js';

export interface NodeRow {
  id: string;
  internal_url: string | null;
  version: string;
  capacity: number;
  running: number;
  draining: boolean;
  started_at: Date;
  heartbeat_at: Date;
  dead_at: Date | null;
  swept_at: Date | null;
}

/** Registers (or re-registers, after a restart with the same id) this node as alive. */
export async function register(db: Db, node: { id: string; internalUrl: string | undefined; version: string; capacity: number }): Promise<void> {
  await db.query(
    `INSERT INTO nodes (id, internal_url, version, capacity) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET internal_url = $2, version = $3, capacity = $4, running = 0,
       draining = false, started_at = now(), heartbeat_at = now(), dead_at = NULL, swept_at = NULL`,
    [node.id, node.internalUrl ?? null, node.version, node.capacity],
  );
}

/** Nodes whose heartbeat is fresher than deadAfterSeconds, oldest first. */
export async function liveNodes(db: Db, deadAfterSeconds: number): Promise<NodeRow[]> {
  return db.query<NodeRow>(`SELECT * FROM nodes WHERE dead_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1) ORDER BY started_at, id`, [
    deadAfterSeconds,
  ]);
}

/** Browsers the cluster's live nodes that take sessions may run together: what a project
 *  without a cap of its own may run. undefined when no such node is registered. */
export async function clusterCapacity(db: Db, deadAfterSeconds: number): Promise<number | undefined> {
  const taking = (await liveNodes(db, deadAfterSeconds)).filter((n) => !n.draining);
  return taking.length ? taking.reduce((sum, n) => sum + n.capacity, 0) : undefined;
}

/** The database's clock: heartbeats are stamped by it, so a node's age is judged by it too,
 *  not by this machine's. */
export async function databaseNow(db: Db): Promise<Date> {
  const [{ now }] = await db.query<{ now: Date }>('SELECT now() AS now');
  return now;
}

/** Every node the database knows, dead ones included (an operator's view). */
export async function allNodes(db: Db): Promise<NodeRow[]> {
  return db.query<NodeRow>('SELECT * FROM nodes ORDER BY started_at, id');
}

/** The node's heartbeat, and whether a survivor has meanwhile claimed it dead (it must then
 *  stop what it runs: its sessions were failed). False when its row is gone. */
export async function beat(db: Db, id: string, running: number, draining: boolean): Promise<{ claimedDead: boolean } | undefined> {
  const [row] = await db.query<{ dead: boolean }>(
    'UPDATE nodes SET heartbeat_at = now(), running = $2, draining = $3 WHERE id = $1 RETURNING dead_at IS NOT NULL AS dead',
    [id, running, draining],
  );
  return row ? { claimedDead: row.dead } : undefined;
}

/** A node claimed dead: its id, and the database's time of the claim (its sessions were all
 *  created before it; a restart with the same id creates its new ones after). */
export interface DeadNode {
  id: string;
  deadAt: Date;
}

/**
 * Claims every other node whose heartbeat is older than deadAfterSeconds, and takes again the
 * claims whose sweep did not finish within sweepLeaseSeconds (the survivor died mid-sweep).
 * One statement a node: of survivors racing, exactly one gets each row back.
 */
export async function claimDead(db: Db, self: string, deadAfterSeconds: number, sweepLeaseSeconds: number): Promise<DeadNode[]> {
  const rows = await db.query<{ id: string; dead_at: Date }>(
    `UPDATE nodes SET dead_at = date_trunc('milliseconds', now())
      WHERE id <> $1 AND swept_at IS NULL
        AND ((dead_at IS NULL AND heartbeat_at < now() - make_interval(secs => $2))
          OR dead_at < now() - make_interval(secs => $3))
      RETURNING id, dead_at`,
    [self, deadAfterSeconds, sweepLeaseSeconds],
  );
  return rows.map((r) => ({ id: r.id, deadAt: r.dead_at }));
}

/** Claims one node dead whose connection is gone (its advisory lock was free) and whose
 *  heartbeat has not moved since `seen`; undefined when it beat meanwhile or another survivor won.
 *  (`seen` came through a JS Date: milliseconds, where the column keeps microseconds.) */
export async function claimSilent(db: Db, id: string, seen: Date): Promise<DeadNode | undefined> {
  const [row] = await db.query<{ id: string; dead_at: Date }>(
    `UPDATE nodes SET dead_at = date_trunc('milliseconds', now()) WHERE id = $1 AND dead_at IS NULL AND date_trunc('milliseconds', heartbeat_at) <= $2 RETURNING id, dead_at`,
    [id, seen],
  );
  return row ? { id: row.id, deadAt: row.dead_at } : undefined;
}

/** The sweep of a dead node is done: nobody takes it again (unless it comes back and dies again). */
export async function markSwept(db: Db, node: DeadNode): Promise<void> {
  await db.query('UPDATE nodes SET swept_at = now() WHERE id = $1 AND dead_at = $2', [node.id, node.deadAt]);
}

/** A node that stopped gracefully leaves the table, so it is never reported dead; unless
 *  something of it is unfinished, which the reaper must then find. Answers whether it left. */
export async function leave(db: Db, id: string): Promise<boolean> {
  const rows = await db.query(
    `DELETE FROM nodes WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM sessions WHERE node_id = $1 AND status IN ('starting', 'running')) RETURNING id`,
    [id],
  );
  return rows.length > 0;
}

export type NodeStatus = 'alive' | 'draining' | 'dead';

/** What the operator sees: dead once claimed, or once its heartbeat is older than the limit. */
export function statusOf(row: NodeRow, now: Date, deadAfterSeconds: number): NodeStatus {
  if (row.dead_at || now.getTime() - row.heartbeat_at.getTime() > deadAfterSeconds * 1000) return 'dead';
  return row.draining ? 'draining' : 'alive';
}
