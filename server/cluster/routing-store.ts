// The lookups of the routing: which live node owns a session, a recording, an MCP session,
// and which live node has room for one more browser. Plain SQL over Db (both backends).
import type { Db } from '../store/db.js';

/** A live node another one can reach. */
export interface Peer {
  nodeId: string;
  internalUrl: string;
}

/** Live: not marked dead, heartbeat fresher than deadAfterSeconds, reachable. */
const LIVE = `n.dead_at IS NULL AND n.heartbeat_at > now() - make_interval(secs => $2) AND n.internal_url IS NOT NULL`;

/** The first node a query answers (its columns node_id and internal_url), or undefined. */
async function peerOf(db: Db, sql: string, params: unknown[]): Promise<Peer | undefined> {
  const [row] = await db.query<{ node_id: string; internal_url: string }>(sql, params);
  return row ? { nodeId: row.node_id, internalUrl: row.internal_url } : undefined;
}

/**
 * The live node a session was created on, whatever the session's state: a running one's
 * browser is there, and an ended one's recording and downloads were written there (unless
 * the blob storage is shared). Undefined when the session is unknown or its node is dead.
 */
export async function nodeOfSession(db: Db, sessionId: string, deadAfterSeconds: number): Promise<Peer | undefined> {
  return peerOf(db, `SELECT n.id AS node_id, n.internal_url FROM sessions s JOIN nodes n ON n.id = s.node_id WHERE s.id = $1 AND ${LIVE}`, [
    sessionId,
    deadAfterSeconds,
  ]);
}

/** The live node whose session made a recording. */
export async function nodeOfRecording(db: Db, recordingId: string, deadAfterSeconds: number): Promise<Peer | undefined> {
  return peerOf(
    db,
    `SELECT n.id AS node_id, n.internal_url FROM recordings r JOIN sessions s ON s.id = r.session_id JOIN nodes n ON n.id = s.node_id
      WHERE r.id = $1 AND ${LIVE}`,
    [recordingId, deadAfterSeconds],
  );
}

/** The live node that holds an MCP session. */
export async function nodeOfMcpSession(db: Db, mcpSessionId: string, deadAfterSeconds: number): Promise<Peer | undefined> {
  return peerOf(db, `SELECT n.id AS node_id, n.internal_url FROM mcp_sessions m JOIN nodes n ON n.id = m.node_id WHERE m.id = $1 AND ${LIVE}`, [
    mcpSessionId,
    deadAfterSeconds,
  ]);
}

/** The live node whose worker runs a task run (claimed, still running). */
export async function nodeOfTaskRun(db: Db, runId: string, deadAfterSeconds: number): Promise<Peer | undefined> {
  return peerOf(
    db,
    `SELECT n.id AS node_id, n.internal_url FROM task_executions t JOIN nodes n ON n.id = t.claimed_by
      WHERE t.run_id = $1 AND t.status = 'running' AND ${LIVE}`,
    [runId, deadAfterSeconds],
  );
}

export async function rememberMcpSession(db: Db, mcpSessionId: string, nodeId: string): Promise<void> {
  await db.query('INSERT INTO mcp_sessions (id, node_id) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [mcpSessionId, nodeId]);
}

/** A node that starts holds no MCP session: the rows of its previous run lead nowhere. */
export async function forgetMcpSessionsOf(db: Db, nodeId: string): Promise<void> {
  await db.query('DELETE FROM mcp_sessions WHERE node_id = $1', [nodeId]);
}

export async function forgetMcpSession(db: Db, mcpSessionId: string): Promise<void> {
  await db.query('DELETE FROM mcp_sessions WHERE id = $1', [mcpSessionId]);
}

/**
 * Another live, non-draining node with room for a browser: the most room first, then the
 * freshest heartbeat. Room is counted from the sessions table (starting and running), which
 * is current, rather than from the heartbeat's `running`, which lags by one beat.
 */
export async function nodeWithRoom(db: Db, exceptNodeId: string, deadAfterSeconds: number): Promise<Peer | undefined> {
  return peerOf(
    db,
    `SELECT node_id, internal_url FROM (
       SELECT n.id AS node_id, n.internal_url, n.heartbeat_at,
              n.capacity - (SELECT count(*) FROM sessions s WHERE s.node_id = n.id AND s.status IN ('starting', 'running'))::int AS room
         FROM nodes n WHERE n.id <> $1 AND NOT n.draining AND ${LIVE}
     ) AS candidates WHERE room > 0 ORDER BY room DESC, heartbeat_at DESC LIMIT 1`,
    [exceptNodeId, deadAfterSeconds],
  );
}

/** The caller's sessions that are starting or running on another live node, by node. */
export async function remoteRunningOfProject(
  db: Db,
  projectId: string,
  exceptNodeId: string,
  deadAfterSeconds: number,
): Promise<(Peer & { sessionId: string })[]> {
  const rows = await db.query<{ session_id: string; node_id: string; internal_url: string }>(
    `SELECT s.id AS session_id, n.id AS node_id, n.internal_url FROM sessions s JOIN nodes n ON n.id = s.node_id
      WHERE s.project_id = $3 AND s.status IN ('starting', 'running') AND s.deleted_at IS NULL AND n.id <> $1 AND ${LIVE}`,
    [exceptNodeId, deadAfterSeconds, projectId],
  );
  return rows.map((r) => ({ sessionId: r.session_id, nodeId: r.node_id, internalUrl: r.internal_url }));
}
