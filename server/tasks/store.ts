// Task rows (tasks, task_versions; migration 014). Every read names the project. Executions
// and the queue are in queue-store.ts.
import { randomUUID } from 'node:crypto';
import type { Db } from '../store/db.js';
import type { components } from '../../generated/types.js';

export type BrowserConfiguration = components['schemas']['TaskBrowserConfiguration'];

export type SelfHealing = components['schemas']['TaskSelfHealing'];

export interface TaskRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  self_healing: SelfHealing;
  created_at: Date;
  updated_at: Date;
}

export interface VersionRow {
  id: string;
  task_id: string;
  project_id: string;
  /** null for the draft. */
  version: number | null;
  code: string;
  language: 'typescript';
  description: string | null;
  browser_configuration: BrowserConfiguration;
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
}

/** What a draft, a deploy or a publish writes. */
export interface VersionFields {
  code: string;
  language: 'typescript';
  description: string | null;
  browserConfiguration: BrowserConfiguration;
}

const TASK_COLUMNS = 'id, project_id, name, description, self_healing, created_at, updated_at';
const VERSION_COLUMNS = 'id, task_id, project_id, version, code, language, description, browser_configuration, deleted, created_at, updated_at';

/** A unique constraint's violation (PGlite and PostgreSQL both report SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '23505';
}

/** Off unless asked for; a fix goes to the draft unless `deploy` is asked for. */
export function selfHealingOf(given: SelfHealing | undefined): SelfHealing {
  return { enabled: given?.enabled ?? false, publish: given?.publish ?? 'draft' };
}

export async function createTask(
  db: Db,
  t: {
    projectId: string;
    name: string;
    description: string | null;
    selfHealing?: SelfHealing;
    draft?: VersionFields;
    /** Written in the task's transaction: the task is never seen without it. */
    with?: (tx: Db, task: TaskRow) => Promise<void>;
  },
): Promise<TaskRow | 'name_taken'> {
  try {
    return await db.transaction(async (tx) => {
      const [row] = await tx.query<TaskRow>(
        `INSERT INTO tasks (id, project_id, name, description, self_healing) VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING ${TASK_COLUMNS}`,
        [randomUUID(), t.projectId, t.name, t.description, JSON.stringify(selfHealingOf(t.selfHealing))],
      );
      if (t.draft) await saveDraft(tx, row, t.draft);
      await t.with?.(tx, row);
      return row;
    });
  } catch (err) {
    if (isUniqueViolation(err)) return 'name_taken';
    throw err;
  }
}

export async function getTask(db: Db, projectId: string, id: string): Promise<TaskRow | undefined> {
  const [row] = await db.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL`, [projectId, id]);
  return row;
}

export async function getTaskByName(db: Db, projectId: string, name: string): Promise<TaskRow | undefined> {
  const [row] = await db.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE project_id = $1 AND name = $2 AND deleted_at IS NULL`, [projectId, name]);
  return row;
}

export async function listTasks(db: Db, projectId: string, page: number, limit: number): Promise<{ rows: TaskRow[]; total: number }> {
  const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE project_id = $1 AND deleted_at IS NULL', [projectId]);
  const rows = await db.query<TaskRow>(
    `SELECT ${TASK_COLUMNS} FROM tasks WHERE project_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`,
    [projectId, limit, (page - 1) * limit],
  );
  return { rows, total: n };
}

export async function updateTask(
  db: Db,
  projectId: string,
  id: string,
  f: { name?: string; description?: string; selfHealing?: SelfHealing },
): Promise<TaskRow | 'name_taken' | undefined> {
  try {
    const [row] = await db.query<TaskRow>(
      `UPDATE tasks SET name = COALESCE($3, name),
              description = CASE WHEN $4::text IS NULL THEN description WHEN $4 = '' THEN NULL ELSE $4 END,
              self_healing = COALESCE($5::jsonb, self_healing),
              updated_at = now()
        WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING ${TASK_COLUMNS}`,
      [projectId, id, f.name ?? null, f.description ?? null, f.selfHealing ? JSON.stringify(selfHealingOf(f.selfHealing)) : null],
    );
    return row;
  } catch (err) {
    if (isUniqueViolation(err)) return 'name_taken';
    throw err;
  }
}

export async function deleteTask(db: Db, projectId: string, id: string): Promise<boolean> {
  const rows = await db.query('UPDATE tasks SET deleted_at = now() WHERE project_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id', [projectId, id]);
  return rows.length > 0;
}

/** The latest deployed (not deleted) version of each task, for listings. */
export async function latestVersions(db: Db, taskIds: string[]): Promise<Map<string, VersionRow>> {
  if (taskIds.length === 0) return new Map();
  const rows = await db.query<VersionRow>(
    `SELECT DISTINCT ON (task_id) ${VERSION_COLUMNS} FROM task_versions
      WHERE task_id = ANY($1::text[]) AND version IS NOT NULL AND NOT deleted
      ORDER BY task_id, version DESC`,
    [taskIds],
  );
  return new Map(rows.map((r) => [r.task_id, r]));
}

/** A version of the task: its number, `latest` (highest deployed) or `draft`; deleted ones are not found. */
/** The largest version number the column holds (integer): the contract's pattern allows any digits. */
export const MAX_VERSION = 2 ** 31 - 1;

/** Whether `n` can be a version number at all; past the column's range no version is. */
export function isVersionNumber(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 1 && n <= MAX_VERSION;
}

export async function getVersion(db: Db, task: TaskRow, which: number | 'latest' | 'draft'): Promise<VersionRow | undefined> {
  // Asked of the database, 99999999999 was "out of range for type integer": a 500, not a 404.
  if (typeof which === 'number' && !isVersionNumber(which)) return undefined;
  const where = which === 'draft' ? 'version IS NULL' : which === 'latest' ? 'version IS NOT NULL' : 'version = $3';
  const params: unknown[] = [task.project_id, task.id];
  if (typeof which === 'number') params.push(which);
  const [row] = await db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM task_versions WHERE project_id = $1 AND task_id = $2 AND NOT deleted AND ${where}
      ORDER BY version DESC NULLS LAST LIMIT 1`,
    params,
  );
  return row;
}

export async function getVersionById(db: Db, task: TaskRow, id: string): Promise<VersionRow | undefined> {
  const [row] = await db.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM task_versions WHERE project_id = $1 AND task_id = $2 AND id = $3 AND NOT deleted`, [
    task.project_id,
    task.id,
    id,
  ]);
  return row;
}

export async function listVersions(db: Db, task: TaskRow): Promise<VersionRow[]> {
  return db.query<VersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM task_versions WHERE project_id = $1 AND task_id = $2 AND NOT deleted ORDER BY version DESC NULLS FIRST`,
    [task.project_id, task.id],
  );
}

/** Creates the draft or replaces it as a whole (its id and creation time stay). */
export async function saveDraft(db: Db, task: Pick<TaskRow, 'id' | 'project_id'>, f: VersionFields): Promise<VersionRow> {
  const params = [task.project_id, task.id, f.code, f.language, f.description, JSON.stringify(f.browserConfiguration)];
  const [updated] = await db.query<VersionRow>(
    `UPDATE task_versions SET code = $3, language = $4, description = $5, browser_configuration = $6::jsonb, updated_at = now()
      WHERE project_id = $1 AND task_id = $2 AND version IS NULL AND NOT deleted RETURNING ${VERSION_COLUMNS}`,
    params,
  );
  if (updated) return updated;
  const [row] = await db.query<VersionRow>(
    `INSERT INTO task_versions (id, project_id, task_id, version, code, language, description, browser_configuration)
     VALUES ($7, $1, $2, NULL, $3, $4, $5, $6::jsonb) RETURNING ${VERSION_COLUMNS}`,
    [...params, randomUUID()],
  );
  await touch(db, task.id);
  return row;
}

/**
 * A new version numbered one more than the highest the task ever had. Two deploys at once
 * read the same highest number; the unique index lets one insert and the other fails, and
 * tries again with the number after.
 */
export async function deploy(db: Db, task: Pick<TaskRow, 'id' | 'project_id'>, f: VersionFields): Promise<VersionRow> {
  for (let attempt = 0; ; attempt++) {
    try {
      const [row] = await db.query<VersionRow>(
        `INSERT INTO task_versions (id, project_id, task_id, version, code, language, description, browser_configuration)
         SELECT $1, $2, $3, COALESCE(MAX(version), 0) + 1, $4, $5, $6, $7::jsonb FROM task_versions WHERE task_id = $3
         RETURNING ${VERSION_COLUMNS}`,
        [randomUUID(), task.project_id, task.id, f.code, f.language, f.description, JSON.stringify(f.browserConfiguration)],
      );
      await touch(db, task.id);
      return row;
    } catch (err) {
      if (!isUniqueViolation(err) || attempt >= 50) throw err;
    }
  }
}

/** Creates version `n` from `f`, or updates the given fields of an existing one. */
export async function publish(
  db: Db,
  task: Pick<TaskRow, 'id' | 'project_id'>,
  n: number,
  f: Partial<VersionFields>,
): Promise<VersionRow | 'no_code' | 'deleted' | 'out_of_range'> {
  if (!isVersionNumber(n)) return 'out_of_range';
  const [existing] = await db.query<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM task_versions WHERE task_id = $1 AND version = $2`, [task.id, n]);
  if (existing?.deleted) return 'deleted';
  if (existing) {
    const [row] = await db.query<VersionRow>(
      `UPDATE task_versions SET code = COALESCE($3, code), language = COALESCE($4, language),
              description = CASE WHEN $5::boolean THEN $6 ELSE description END,
              browser_configuration = COALESCE($7::jsonb, browser_configuration), updated_at = now()
        WHERE task_id = $1 AND version = $2 RETURNING ${VERSION_COLUMNS}`,
      [
        task.id,
        n,
        f.code ?? null,
        f.language ?? null,
        f.description !== undefined,
        f.description ?? null,
        f.browserConfiguration ? JSON.stringify(f.browserConfiguration) : null,
      ],
    );
    return row;
  }
  if (!f.code) return 'no_code';
  try {
    const [row] = await db.query<VersionRow>(
      `INSERT INTO task_versions (id, project_id, task_id, version, code, language, description, browser_configuration)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb) RETURNING ${VERSION_COLUMNS}`,
      [randomUUID(), task.project_id, task.id, n, f.code, f.language ?? 'typescript', f.description ?? null, JSON.stringify(f.browserConfiguration ?? {})],
    );
    await touch(db, task.id);
    return row;
  } catch (err) {
    // Published by another request in between: update it as if it had been there.
    if (isUniqueViolation(err)) return publish(db, task, n, f);
    throw err;
  }
}

export async function deleteVersion(db: Db, version: VersionRow): Promise<void> {
  await db.query('UPDATE task_versions SET deleted = true, updated_at = now() WHERE id = $1', [version.id]);
}

async function touch(db: Db, taskId: string): Promise<void> {
  await db.query('UPDATE tasks SET updated_at = now() WHERE id = $1', [taskId]);
}
