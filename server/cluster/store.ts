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
}

/** Registers (or re-registers, after a restart with the same id) this node as alive. */
export async function register(db: Db, node: { id: string; internalUrl: string | undefined; version: string; capacity: number }): Promise<void> {
  await db.query(
    `INSERT INTO nodes (id, internal_url, version, capacity) VALUES ($1, $2, $3, $4)
     ON CONFLICT (id) DO UPDATE SET internal_url = $2, version = $3, capacity = $4, running = 0,
       draining = false, started_at = now(), heartbeat_at = now(), dead_at = NULL`,
    [node.id, node.internalUrl ?? null, node.version, node.capacity],
  );
}

/** This node is alive; `running` is its browsers running or starting. */
export async function heartbeat(db: Db, id: string, running: number, draining: boolean): Promise<void> {
  await db.query('UPDATE nodes SET heartbeat_at = now(), running = $2, draining = $3 WHERE id = $1', [id, running, draining]);
}

/** Nodes whose heartbeat is fresher than deadAfterSeconds, oldest first. */
export async function liveNodes(db: Db, deadAfterSeconds: number): Promise<NodeRow[]> {
  return db.query<NodeRow>(
    `SELECT * FROM nodes WHERE dead_at IS NULL AND heartbeat_at > now() - make_interval(secs => $1) ORDER BY started_at, id`,
    [deadAfterSeconds],
  );
}

/** Every node the database knows, dead ones included (an operator's view). */
export async function allNodes(db: Db): Promise<NodeRow[]> {
  return db.query<NodeRow>('SELECT * FROM nodes ORDER BY started_at, id');
}

/** Where the node that owns a session answers: undefined when the session is unknown or
 *  finished, or its node runs alone or is dead. */
export async function ownerOfSession(db: Db, sessionId: string, deadAfterSeconds: number): Promise<{ nodeId: string; internalUrl: string | null } | undefined> {
  const [row] = await db.query<{ node_id: string; internal_url: string | null }>(
    `SELECT s.node_id, n.internal_url FROM sessions s JOIN nodes n ON n.id = s.node_id
      WHERE s.id = $1 AND s.status IN ('starting', 'running')
        AND n.dead_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => $2)`,
    [sessionId, deadAfterSeconds],
  );
  return row ? { nodeId: row.node_id, internalUrl: row.internal_url } : undefined;
}
