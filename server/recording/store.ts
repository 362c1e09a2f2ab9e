// Recording rows, and the session facts the recording operations need. Every query names
// the project: another project's session or recording is not found.
import type { Db } from '../store/db.js';

export interface RecordingRow {
  id: string;
  project_id: string;
  session_id: string;
  is_primary: boolean;
  storage_key: string;
  duration_ms: number;
  size_bytes: number;
  paused_ms: number;
  created_at: Date;
}

export interface SessionFacts {
  id: string;
  project_id: string;
  status: 'starting' | 'running' | 'completed' | 'failed';
  /** session.recording.active of the creation body (default true). */
  recording: boolean;
}

/**
 * The session as the recording operations see it. Sessions ended through DELETE are still
 * found: their recordings outlive the DELETE that ended them.
 */
export async function sessionFacts(db: Db, projectId: string, sessionId: string): Promise<SessionFacts | undefined> {
  const [row] = await db.query<{ id: string; project_id: string; status: SessionFacts['status']; recording: unknown }>(
    `SELECT id, project_id, status, configuration->'session'->'recording'->'active' AS recording
       FROM sessions WHERE project_id = $1 AND id = $2`,
    [projectId, sessionId],
  );
  return row && { id: row.id, project_id: row.project_id, status: row.status, recording: row.recording !== false };
}

export async function projectOfSession(db: Db, sessionId: string): Promise<string | undefined> {
  const [row] = await db.query<{ project_id: string }>('SELECT project_id FROM sessions WHERE id = $1', [sessionId]);
  return row?.project_id;
}

export async function insertRecording(db: Db, r: Omit<RecordingRow, 'created_at'>): Promise<RecordingRow> {
  const [row] = await db.query<RecordingRow>(
    `INSERT INTO recordings (id, project_id, session_id, is_primary, storage_key, duration_ms, size_bytes, paused_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
    [r.id, r.project_id, r.session_id, r.is_primary, r.storage_key, r.duration_ms, r.size_bytes, r.paused_ms],
  );
  return row;
}

export async function listRecordings(db: Db, projectId: string, sessionId: string): Promise<RecordingRow[]> {
  return db.query<RecordingRow>('SELECT * FROM recordings WHERE project_id = $1 AND session_id = $2 ORDER BY is_primary DESC, created_at, id', [
    projectId,
    sessionId,
  ]);
}

/** A recording by id, or the primary one for `primary`. */
export async function findRecording(db: Db, projectId: string, sessionId: string, recordingId: string): Promise<RecordingRow | undefined> {
  const rows =
    recordingId === 'primary'
      ? await db.query<RecordingRow>('SELECT * FROM recordings WHERE project_id = $1 AND session_id = $2 AND is_primary', [projectId, sessionId])
      : await db.query<RecordingRow>('SELECT * FROM recordings WHERE project_id = $1 AND session_id = $2 AND id = $3', [
          projectId,
          sessionId,
          recordingId.toLowerCase(),
        ]);
  return rows[0];
}

/** A recording by id alone, for signed download links (the signature is the authority). */
export async function recordingById(db: Db, id: string): Promise<RecordingRow | undefined> {
  const [row] = await db.query<RecordingRow>('SELECT * FROM recordings WHERE id = $1', [id]);
  return row;
}

export async function deleteRecording(db: Db, projectId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM recordings WHERE project_id = $1 AND id = $2 RETURNING id', [projectId, id]);
  return rows.length > 0;
}
