// The interventions' rows and the agents' pause flags.
import type { Db } from '../store/db.js';

export const INPUT_TYPES = ['confirm', 'text', 'otp', 'takeover'] as const;
export type InputType = (typeof INPUT_TYPES)[number];
export type InterventionStatus = 'pending' | 'resolved' | 'expired' | 'cancelled';

export interface PendingRow {
  id: string;
  message: string;
  input_type: InputType;
  live_view_url: string;
  created_at: Date;
}

export async function insertRequest(
  db: Db,
  r: { id: string; projectId: string; sessionId: string; message: string; inputType: InputType; liveViewUrl: string; expiresAt: Date },
): Promise<void> {
  await db.query(`INSERT INTO interventions (id, project_id, session_id, message, input_type, live_view_url, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
    r.id,
    r.projectId,
    r.sessionId,
    r.message,
    r.inputType,
    r.liveViewUrl,
    r.expiresAt,
  ]);
}

/** A session's pending requests, oldest first. */
export async function pendingOf(db: Db, projectId: string, sessionId: string): Promise<PendingRow[]> {
  return db.query<PendingRow>(
    `SELECT id, message, input_type, live_view_url, created_at FROM interventions
      WHERE project_id = $1 AND session_id = $2 AND status = 'pending' ORDER BY created_at, id`,
    [projectId, sessionId],
  );
}

/** Answers a pending request; false when there is none with that id (any more). */
export async function resolve(db: Db, projectId: string, sessionId: string, id: string, sealedAnswer: string): Promise<boolean> {
  const rows = await db.query(
    `UPDATE interventions SET status = 'resolved', answer = $4, resolved_at = now()
      WHERE project_id = $1 AND session_id = $2 AND id = $3 AND status = 'pending' RETURNING id`,
    [projectId, sessionId, id, sealedAnswer],
  );
  return rows.length > 0;
}

export async function stateOf(db: Db, id: string): Promise<{ status: InterventionStatus; answer: string | null } | undefined> {
  const [row] = await db.query<{ status: InterventionStatus; answer: string | null }>('SELECT status, answer FROM interventions WHERE id = $1', [id]);
  return row;
}

/** Ends a request still pending as expired or cancelled; false when it was answered first. */
export async function finish(db: Db, id: string, status: 'expired' | 'cancelled'): Promise<boolean> {
  const rows = await db.query(`UPDATE interventions SET status = $2, answer = NULL WHERE id = $1 AND status = 'pending' RETURNING id`, [id, status]);
  return rows.length > 0;
}

/** The session ended: what it still waited on is cancelled, and its agent no longer paused. */
export async function endSession(db: Db, sessionId: string): Promise<void> {
  await db.query(`UPDATE interventions SET status = 'cancelled', answer = NULL WHERE session_id = $1 AND status = 'pending'`, [sessionId]);
  await db.query('DELETE FROM agent_pauses WHERE session_id = $1', [sessionId]);
}

export async function setPaused(db: Db, projectId: string, sessionId: string, paused: boolean): Promise<void> {
  if (paused) await db.query('INSERT INTO agent_pauses (session_id, project_id) VALUES ($1, $2) ON CONFLICT (session_id) DO NOTHING', [sessionId, projectId]);
  else await db.query('DELETE FROM agent_pauses WHERE project_id = $1 AND session_id = $2', [projectId, sessionId]);
}

export async function isPaused(db: Db, sessionId: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM agent_pauses WHERE session_id = $1', [sessionId])).length > 0;
}
