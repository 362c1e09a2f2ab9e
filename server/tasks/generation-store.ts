// Generation rows (task_generations, migration 032): one a generated task, written in the
// task's own transaction. Every end is conditional on the row still generating, so a
// generation that ends and a recovery that fails it never both win.
import type { Db } from '../store/db.js';
import type { components } from '../../generated/types.js';

export type GenerateRequest = components['schemas']['TaskGenerateRequest'];
export type GenerationStatus = components['schemas']['TaskGenerationStatus']['status'];

/** What the model is asked, as kept with the generation. */
export type GenerationAsk = Pick<GenerateRequest, 'user_task' | 'input_schema' | 'output_schema' | 'application_id'>;

export interface GenerationRow {
  task_id: string;
  project_id: string;
  status: GenerationStatus;
  error: string | null;
  node_id: string;
  request: GenerationAsk;
}

/** Whether the application a generation's ask names is the project's. */
export async function applicationInProject(db: Db, projectId: string, applicationId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM applications WHERE id = $1 AND project_id = $2', [applicationId, projectId]);
  return rows.length > 0;
}

export async function insertGeneration(tx: Db, g: { taskId: string; projectId: string; nodeId: string; ask: GenerationAsk }): Promise<void> {
  await tx.query('INSERT INTO task_generations (task_id, project_id, node_id, request) VALUES ($1, $2, $3, $4::jsonb)', [
    g.taskId,
    g.projectId,
    g.nodeId,
    JSON.stringify(g.ask),
  ]);
}

export async function getGeneration(db: Db, projectId: string, taskId: string): Promise<GenerationRow | undefined> {
  const [row] = await db.query<GenerationRow>('SELECT * FROM task_generations WHERE project_id = $1 AND task_id = $2', [projectId, taskId]);
  return row;
}

/** Ends a generation still running; false when it had ended (failed by a recovery). */
export async function endGeneration(db: Db, taskId: string, end: { status: 'ready' } | { status: 'failed'; error: string }): Promise<boolean> {
  const rows = await db.query(
    `UPDATE task_generations SET status = $2, error = $3, updated_at = now() WHERE task_id = $1 AND status = 'generating' RETURNING task_id`,
    [taskId, end.status, end.status === 'failed' ? end.error.slice(0, 4000) : null],
  );
  return rows.length > 0;
}

/** Fails the generations a stopped node left running (`before`: a node claimed dead, see LeftNode). */
export async function failLeftBy(db: Db, nodeId: string, error: string, before?: Date): Promise<number> {
  const rows = await db.query(
    `UPDATE task_generations SET status = 'failed', error = $2, updated_at = now()
      WHERE node_id = $1 AND status = 'generating' AND ($3::timestamptz IS NULL OR created_at < $3) RETURNING task_id`,
    [nodeId, error, before ?? null],
  );
  return rows.length;
}
