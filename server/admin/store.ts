// Projects and API keys as the operator manages them (the admin API). Keys are made the
// way every key is (auth/api-keys.ts): random, stored as their SHA-256, shown once.
import { randomUUID } from 'node:crypto';
import { hashKey, newApiKey, newId } from '../auth/api-keys.js';
import type { Db } from '../store/db.js';

export interface ProjectRow {
  id: string;
  name: string;
  tier: string;
  included_credits: number | null;
  cost_limit: number | null;
  max_concurrent_browsers: number | null;
  browser_memory_limit_mb: number | null;
  browser_cpu_limit: number | null;
  gift_credits: number;
  created_at: Date;
}

export interface KeyRow {
  id: string;
  project_id: string;
  name: string | null;
  prefix: string;
  source: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** The fields the operator sets; a limit of null means the server's configuration. */
export interface ProjectFields {
  name: string;
  tier: string;
  included_credits: number | null;
  cost_limit: number | null;
  max_concurrent_browsers: number | null;
  browser_memory_limit_mb: number | null;
  browser_cpu_limit: number | null;
}

const PROJECT_COLUMNS =
  'id, name, tier, included_credits, cost_limit, max_concurrent_browsers, browser_memory_limit_mb, browser_cpu_limit, gift_credits, created_at';
/** What the operator may set, a fixed list: column names never come from a request. */
const FIELDS = ['name', 'tier', 'included_credits', 'cost_limit', 'max_concurrent_browsers', 'browser_memory_limit_mb', 'browser_cpu_limit'] as const;
const KEY_COLUMNS = 'id, project_id, name, prefix, source, created_at, last_used_at, revoked_at';

export async function listProjects(db: Db): Promise<ProjectRow[]> {
  return db.query<ProjectRow>(`SELECT ${PROJECT_COLUMNS} FROM projects ORDER BY created_at, id`);
}

export async function getProject(db: Db, id: string): Promise<ProjectRow | undefined> {
  return (await db.query<ProjectRow>(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1`, [id]))[0];
}

export async function insertProject(db: Db, f: ProjectFields): Promise<ProjectRow> {
  const [row] = await db.query<ProjectRow>(
    `INSERT INTO projects (id, ${FIELDS.join(', ')}) VALUES ($1, ${FIELDS.map((_, i) => `$${i + 2}`).join(', ')}) RETURNING ${PROJECT_COLUMNS}`,
    [randomUUID(), ...FIELDS.map((c) => f[c])],
  );
  return row;
}

export async function updateProject(db: Db, id: string, patch: Partial<ProjectFields>): Promise<ProjectRow | undefined> {
  const columns = FIELDS.filter((c) => c in patch);
  if (columns.length === 0) return getProject(db, id);
  const sets = columns.map((c, i) => `${c} = $${i + 2}`).join(', ');
  const [row] = await db.query<ProjectRow>(`UPDATE projects SET ${sets} WHERE id = $1 RETURNING ${PROJECT_COLUMNS}`, [id, ...columns.map((c) => patch[c])]);
  return row;
}

/** Blob areas and the tables whose rows name their objects (storage_key), by project. */
const STORED_FILES: readonly { table: string; area: string }[] = [
  { table: 'recordings', area: 'recordings' },
  { table: 'session_downloads', area: 'downloads' },
  { table: 'profiles', area: 'profiles' },
  { table: 'extensions', area: 'extensions' },
  { table: 'task_artifacts', area: 'task-artifacts' },
];

export type DeleteOutcome =
  | { deleted: true; files: { area: string; key: string }[] }
  | { deleted: false; reason: 'not_found' }
  | { deleted: false; reason: 'busy'; message: string };

/**
 * Deletes the project and, by cascade, every row it owns, unless it has a session starting
 * or running or a batch still starting sessions: those belong to browsers on some node,
 * which a row deletion would orphan. The project's row is locked first, as a session
 * creation locks it (sessions/store.ts), so no session starts in between. Answers the
 * stored files the deleted rows named, for the caller to remove once committed.
 */
export async function deleteProject(db: Db, id: string): Promise<DeleteOutcome> {
  return db.transaction(async (tx): Promise<DeleteOutcome> => {
    const [project] = await tx.query<{ id: string }>('SELECT id FROM projects WHERE id = $1 FOR UPDATE', [id]);
    if (!project) return { deleted: false, reason: 'not_found' };
    const [{ sessions }] = await tx.query<{ sessions: number }>(
      `SELECT count(*)::int AS sessions FROM sessions WHERE project_id = $1 AND status IN ('starting', 'running')`,
      [id],
    );
    const [{ batches }] = await tx.query<{ batches: number }>(`SELECT count(*)::int AS batches FROM batches WHERE project_id = $1 AND status = 'pending'`, [
      id,
    ]);
    if (sessions > 0 || batches > 0) {
      return {
        deleted: false,
        reason: 'busy',
        message: `The project has ${sessions} session(s) starting or running and ${batches} batch(es) in progress: end them first`,
      };
    }
    const files: { area: string; key: string }[] = [];
    for (const { table, area } of STORED_FILES) {
      const rows = await tx.query<{ storage_key: string | null }>(`SELECT storage_key FROM ${table} WHERE project_id = $1`, [id]);
      for (const r of rows) if (r.storage_key) files.push({ area, key: r.storage_key });
    }
    await tx.query('DELETE FROM projects WHERE id = $1', [id]);
    return { deleted: true, files };
  });
}

export async function listKeys(db: Db, projectId: string): Promise<KeyRow[]> {
  return db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE project_id = $1 ORDER BY created_at, id`, [projectId]);
}

/** A new key of the project, or undefined when there is no such project. */
export async function createKey(db: Db, projectId: string, name: string | null): Promise<{ row: KeyRow; key: string } | undefined> {
  const key = newApiKey();
  const rows = await db.query<KeyRow>(
    `INSERT INTO api_keys (id, project_id, key_hash, prefix, source, name)
     SELECT $1, id, $3, $4, 'admin', $5 FROM projects WHERE id = $2
     RETURNING ${KEY_COLUMNS}`,
    [newId('key'), projectId, hashKey(key), key.slice(0, 7), name],
  );
  return rows[0] && { row: rows[0], key };
}

/** Revokes the key (again is harmless); false when there is no such key. */
export async function revokeKey(db: Db, id: string): Promise<boolean> {
  const rows = await db.query<{ id: string }>('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id', [id]);
  return rows.length > 0;
}
