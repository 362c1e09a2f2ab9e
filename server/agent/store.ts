// The web_tasks table (migration 018): asynchronous perform-web-task runs and their steps.
import type { Db } from '../store/db.js';
import type { StepRecord } from './steps.js';

export type WebTaskStatus = 'RUNNING' | 'COMPLETED' | 'FAILED';

export interface WebTaskRow {
  id: string;
  project_id: string;
  session_id: string | null;
  status: WebTaskStatus;
  steps: StepRecord[];
  result: Record<string, unknown> | null;
  error: string | null;
  deadline: Date;
}

/** Past its deadline by this much, a RUNNING row has lost the server that ran it. */
const LOST_AFTER_MS = 30_000;

export async function insertRunning(db: Db, t: { id: string; projectId: string; deadline: Date }): Promise<void> {
  await db.query(`INSERT INTO web_tasks (id, project_id, status, deadline) VALUES ($1, $2, 'RUNNING', $3)`, [t.id, t.projectId, t.deadline.toISOString()]);
}

export async function recordProgress(db: Db, id: string, p: { sessionId?: string; steps: StepRecord[] }): Promise<void> {
  await db.query(`UPDATE web_tasks SET steps = $2, session_id = COALESCE($3, session_id) WHERE id = $1 AND status = 'RUNNING'`, [
    id,
    JSON.stringify(p.steps),
    p.sessionId ?? null,
  ]);
}

export async function recordEnd(
  db: Db,
  id: string,
  end: { status: 'COMPLETED'; result: Record<string, unknown>; steps: StepRecord[] } | { status: 'FAILED'; error: string; steps: StepRecord[] },
): Promise<void> {
  await db.query(`UPDATE web_tasks SET status = $2, result = $3, error = $4, steps = $5, ended_at = now() WHERE id = $1 AND status = 'RUNNING'`, [
    id,
    end.status,
    end.status === 'COMPLETED' ? JSON.stringify(end.result) : null,
    end.status === 'FAILED' ? end.error : null,
    JSON.stringify(end.steps),
  ]);
}

/** The project's web task; a RUNNING one whose server is gone is recorded FAILED first. */
export async function getWebTask(db: Db, projectId: string, id: string): Promise<WebTaskRow | undefined> {
  const [row] = await db.query<WebTaskRow>(
    'SELECT id, project_id, session_id, status, steps, result, error, deadline FROM web_tasks WHERE project_id = $1 AND id = $2',
    [projectId, id],
  );
  if (row?.status === 'RUNNING' && Date.now() > new Date(row.deadline).getTime() + LOST_AFTER_MS) {
    const error = 'The web task was interrupted: its server stopped before it finished';
    await recordEnd(db, id, { status: 'FAILED', error, steps: row.steps });
    return { ...row, status: 'FAILED', error };
  }
  return row;
}
