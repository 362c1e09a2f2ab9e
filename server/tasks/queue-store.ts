// Task executions (task_executions, task_artifacts; migration 014): the run queue. A run is
// queued by the API, claimed by one node's worker (FOR UPDATE SKIP LOCKED, as batch items
// are), and moved to a terminal state exactly once: every such move is an UPDATE
// conditional on the state it leaves, and writes the task event in the same transaction,
// so the event exists exactly when the outcome does.
import { randomUUID } from 'node:crypto';
import type { Db } from '../store/db.js';
import { emitEvent, type EmitSignals, type EmittedEvent } from '../outbox/emit.js';
import type { EventDataMap } from '../outbox/types.js';
import type { components } from '../../generated/types.js';
import type { BrowserConfiguration } from './store.js';

export type ExecutionStatus = components['schemas']['TaskExecutionStatus'];
export type ErrorType = components['schemas']['TaskExecutionError']['type'];
export type Terminal = Exclude<ExecutionStatus, 'queued' | 'running'>;
/** A line the task code logged (ctx.log, console), kept on the execution. */
export interface LogLine {
  at: string;
  level: string;
  message: string;
}

export interface ExecutionRow {
  id: string;
  project_id: string;
  api_key_id: string;
  task_id: string;
  task_version_id: string;
  version_label: string;
  run_id: string | null;
  status: ExecutionStatus;
  input: Record<string, string>;
  browser_configuration: BrowserConfiguration;
  session_id: string | null;
  own_session: boolean;
  cleanup_sessions: boolean;
  identity_id: string | null;
  identity_skip_validation: boolean;
  cancel_requested: boolean;
  output: Record<string, unknown> | null;
  error_type: ErrorType | null;
  error_message: string | null;
  root_cause: string | null;
  logs: LogLine[];
  cost_credits: number;
  claimed_by: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  duration_ms: number | null;
}

export interface NewExecution {
  projectId: string;
  apiKeyId: string;
  taskId: string;
  versionId: string;
  versionLabel: string;
  /** Only runs started through POST /v2/tasks/{taskId}/run have one. */
  runId?: string;
  input: Record<string, string>;
  browserConfiguration: BrowserConfiguration;
  /** An existing running session to run in; otherwise the run creates its own. */
  sessionId?: string;
  cleanupSessions: boolean;
  identityId?: string;
  identitySkipValidation?: boolean;
}

/**
 * Queues a run. With `claimBy` (a node with room for it now) the run is that node's at once,
 * status running, in the same statement, unless runs are waiting in the queue: then it
 * queues behind them, and the row's status says which it is.
 */
export async function enqueue(db: Db, e: NewExecution, claimBy?: string): Promise<ExecutionRow> {
  const [row] = await db.query<ExecutionRow>(
    `WITH here AS (SELECT $15::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM task_executions WHERE status = 'queued') AS claimed)
     INSERT INTO task_executions (id, project_id, api_key_id, task_id, task_version_id, version_label, run_id, input,
       browser_configuration, session_id, own_session, cleanup_sessions, identity_id, identity_skip_validation,
       status, claimed_by, started_at)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9::jsonb, $10, $11, $12, $13, $14,
            CASE WHEN claimed THEN 'running' ELSE 'queued' END, CASE WHEN claimed THEN $15 END, CASE WHEN claimed THEN now() END
       FROM here
     RETURNING *`,
    [
      randomUUID(),
      e.projectId,
      e.apiKeyId,
      e.taskId,
      e.versionId,
      e.versionLabel,
      e.runId ?? null,
      JSON.stringify(e.input),
      JSON.stringify(e.browserConfiguration),
      e.sessionId ?? null,
      e.sessionId === undefined,
      e.cleanupSessions,
      e.identityId ?? null,
      e.identitySkipValidation ?? false,
      claimBy ?? null,
    ],
  );
  return row;
}

export async function getExecution(db: Db, projectId: string, id: string): Promise<ExecutionRow | undefined> {
  const [row] = await db.query<ExecutionRow>('SELECT * FROM task_executions WHERE project_id = $1 AND id = $2', [projectId, id]);
  return row;
}

export async function getRun(db: Db, projectId: string, runId: string): Promise<ExecutionRow | undefined> {
  const [row] = await db.query<ExecutionRow>('SELECT * FROM task_executions WHERE project_id = $1 AND run_id = $2', [projectId, runId]);
  return row;
}

export async function listExecutions(
  db: Db,
  projectId: string,
  taskId: string,
  f: { page: number; limit: number; status?: ExecutionStatus; version?: string },
): Promise<{ rows: ExecutionRow[]; total: number }> {
  const params: unknown[] = [projectId, taskId];
  let where = 'project_id = $1 AND task_id = $2';
  if (f.status) {
    params.push(f.status);
    where += ` AND status = $${params.length}`;
  }
  if (f.version) {
    params.push(f.version);
    where += ` AND version_label = $${params.length}`;
  }
  const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM task_executions WHERE ${where}`, params);
  const rows = await db.query<ExecutionRow>(
    `SELECT * FROM task_executions WHERE ${where} ORDER BY created_at DESC, id LIMIT ${f.limit} OFFSET ${(f.page - 1) * f.limit}`,
    params,
  );
  return { rows, total: n };
}

/** A claimed run, with its version's code (null when the version is gone). */
export type ClaimedRow = ExecutionRow & { version_code: string | null };

/**
 * Claims up to `n` queued runs for this node, oldest first; several nodes claim different
 * ones. The version's code comes in the same statement: a run starts one round trip sooner.
 */
export async function claim(db: Db, nodeId: string, n: number): Promise<ClaimedRow[]> {
  if (n <= 0) return [];
  return db.query<ClaimedRow>(
    `WITH claimed AS (
       UPDATE task_executions SET status = 'running', claimed_by = $1, started_at = now()
        WHERE id IN (SELECT id FROM task_executions WHERE status = 'queued' ORDER BY created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING *
     )
     SELECT claimed.*, v.code AS version_code FROM claimed LEFT JOIN task_versions v ON v.id = claimed.task_version_id`,
    [nodeId, n],
  );
}

export async function anyQueued(db: Db): Promise<boolean> {
  return (await db.query("SELECT 1 FROM task_executions WHERE status = 'queued' LIMIT 1")).length > 0;
}

/** Puts a claimed run back in the queue (no browser was free); it keeps its place. */
export async function release(db: Db, id: string): Promise<void> {
  await db.query(`UPDATE task_executions SET status = 'queued', claimed_by = NULL, started_at = NULL, session_id = NULL WHERE id = $1 AND status = 'running'`, [
    id,
  ]);
}

/** The session the run created, once it exists. */
export async function setSession(db: Db, id: string, sessionId: string): Promise<void> {
  await db.query('UPDATE task_executions SET session_id = $2 WHERE id = $1', [id, sessionId]);
}

/** Runs of this node whose cancel was asked (by any node's API). */
export async function cancelRequested(db: Db, nodeId: string): Promise<string[]> {
  const rows = await db.query<{ id: string }>("SELECT id FROM task_executions WHERE claimed_by = $1 AND status = 'running' AND cancel_requested", [nodeId]);
  return rows.map((r) => r.id);
}

export type CancelResult = { outcome: 'cancelled'; row: ExecutionRow } | { outcome: 'requested'; row: ExecutionRow } | { outcome: 'ended'; row: ExecutionRow };

/**
 * A cancel: a queued run is cancelled here, with its event; a running one is marked, and the
 * node running it stops it (the event follows from there); an ended one is left as it is.
 */
export async function cancel(
  db: Db,
  signals: EmitSignals,
  row: ExecutionRow,
  data: (row: ExecutionRow) => EventDataMap['task.cancelled'],
): Promise<CancelResult> {
  return db.transaction(async (tx) => {
    const [queued] = await tx.query<ExecutionRow>(
      `UPDATE task_executions SET status = 'cancelled', cancel_requested = true, finished_at = now(), duration_ms = 0, error_message = 'Cancelled before it started'
        WHERE id = $1 AND status = 'queued' RETURNING *`,
      [row.id],
    );
    if (queued) {
      await emitEvent(tx, signals, queued.project_id, 'task.cancelled', data(queued));
      return { outcome: 'cancelled', row: queued };
    }
    const [running] = await tx.query<ExecutionRow>(`UPDATE task_executions SET cancel_requested = true WHERE id = $1 AND status = 'running' RETURNING *`, [
      row.id,
    ]);
    if (running) return { outcome: 'requested', row: running };
    const [ended] = await tx.query<ExecutionRow>('SELECT * FROM task_executions WHERE id = $1', [row.id]);
    return { outcome: 'ended', row: ended };
  });
}

export type Outcome =
  | { status: 'success'; output: Record<string, unknown> }
  | { status: 'failure' | 'timeout'; error: { type: ErrorType; message: string; rootCause: string } }
  | { status: 'cancelled'; message: string };

export interface Finish {
  outcome: Outcome;
  durationMs: number;
  costCredits: number;
  logs: LogLine[];
  sessionId: string | null;
}

/**
 * Records a running run's outcome and its event, once: a second finish of the same run (a
 * cancel racing the end, a recovery) changes nothing and emits nothing. Answers the row and
 * its event, or undefined when the run had already ended.
 */
export async function finish(
  db: Db,
  signals: EmitSignals,
  id: string,
  f: Finish,
  event: (
    row: ExecutionRow,
  ) => { [T in 'task.completed' | 'task.failed' | 'task.cancelled']: { type: T; data: EventDataMap[T] } }['task.completed' | 'task.failed' | 'task.cancelled'],
): Promise<{ row: ExecutionRow; event: EmittedEvent } | undefined> {
  const o = f.outcome;
  return db.transaction(async (tx) => {
    const [row] = await tx.query<ExecutionRow>(
      `UPDATE task_executions SET status = $2, output = $3::jsonb, error_type = $4, error_message = $5, root_cause = $6,
              logs = $7::jsonb, duration_ms = $8, cost_credits = $9, session_id = COALESCE($10, session_id), finished_at = now()
        WHERE id = $1 AND status = 'running' RETURNING *`,
      [
        id,
        o.status,
        o.status === 'success' ? JSON.stringify(o.output) : null,
        o.status === 'failure' || o.status === 'timeout' ? o.error.type : null,
        o.status === 'failure' || o.status === 'timeout' ? o.error.message : o.status === 'cancelled' ? o.message : null,
        o.status === 'failure' || o.status === 'timeout' ? o.error.rootCause : null,
        JSON.stringify(f.logs),
        Math.max(0, Math.round(f.durationMs)),
        f.costCredits,
        f.sessionId,
      ],
    );
    if (!row) return undefined;
    const e = event(row);
    return { row, event: await emitEvent(tx, signals, row.project_id, e.type, e.data as never) };
  });
}

/** The runs this node was running when it stopped (a kill): each fails once, with its event. */
export async function runningOn(db: Db, nodeId: string, before?: Date): Promise<ExecutionRow[]> {
  // `before`: a node claimed dead by another; only the runs it claimed before (see LeftNode).
  return db.query<ExecutionRow>("SELECT * FROM task_executions WHERE claimed_by = $1 AND status = 'running' AND ($2::timestamptz IS NULL OR started_at < $2)", [
    nodeId,
    before ?? null,
  ]);
}

// ---------------------------------------------------------------------------------------
// Artifacts

export interface ArtifactRow {
  id: string;
  project_id: string;
  execution_id: string;
  name: string;
  storage_key: string;
  size_bytes: number;
  content_type: string;
}

export async function addArtifact(db: Db, a: Omit<ArtifactRow, 'id'> & { id: string }): Promise<void> {
  await db.query('INSERT INTO task_artifacts (id, project_id, execution_id, name, storage_key, size_bytes, content_type) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
    a.id,
    a.project_id,
    a.execution_id,
    a.name,
    a.storage_key,
    a.size_bytes,
    a.content_type,
  ]);
}

export async function artifactsOf(db: Db, executionId: string): Promise<ArtifactRow[]> {
  return db.query<ArtifactRow>('SELECT * FROM task_artifacts WHERE execution_id = $1 ORDER BY created_at, name', [executionId]);
}

/** An artifact by id alone, for signed links (the signature is the authority). */
export async function artifactById(db: Db, id: string): Promise<ArtifactRow | undefined> {
  const [row] = await db.query<ArtifactRow>('SELECT * FROM task_artifacts WHERE id = $1', [id]);
  return row;
}

/** A session's status, settled credits (at its end) and CDP token; undefined when there is no such session. */
export async function sessionFacts(db: Db, sessionId: string): Promise<{ status: string; credits_used: number | null; cdp_token: string } | undefined> {
  const [row] = await db.query<{ status: string; credits_used: number | null; cdp_token: string }>(
    'SELECT status, credits_used, cdp_token FROM sessions WHERE id = $1',
    [sessionId],
  );
  return row;
}

/** Whether the session is the project's and not deleted: a run may be queued on it. */
export async function isSessionOfProject(db: Db, sessionId: string, projectId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM sessions WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL', [sessionId, projectId]);
  return rows.length > 0;
}
