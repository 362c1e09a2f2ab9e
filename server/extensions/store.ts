// The extensions table: one row an uploaded extension of a project, its ZIP in blob storage.
import type { Db } from '../store/db.js';
import type { Manifest } from './archive.js';

export interface ExtensionRow {
  id: string;
  project_id: string;
  name: string;
  manifest: Manifest;
  storage_key: string;
  archive_prefix: string;
  size_bytes: number;
  created_at: Date;
  updated_at: Date;
}

export async function insertExtension(db: Db, row: Omit<ExtensionRow, 'created_at' | 'updated_at'>): Promise<ExtensionRow> {
  const [inserted] = await db.query<ExtensionRow>(
    `INSERT INTO extensions (id, project_id, name, manifest, storage_key, archive_prefix, size_bytes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
    [row.id, row.project_id, row.name, JSON.stringify(row.manifest), row.storage_key, row.archive_prefix, row.size_bytes],
  );
  return inserted!;
}

export async function listExtensions(db: Db, projectId: string): Promise<ExtensionRow[]> {
  return db.query<ExtensionRow>('SELECT * FROM extensions WHERE project_id = $1 ORDER BY created_at, id', [projectId]);
}

/** The project's extensions among `ids`, in no particular order. */
export async function findExtensions(db: Db, projectId: string, ids: string[]): Promise<ExtensionRow[]> {
  return db.query<ExtensionRow>('SELECT * FROM extensions WHERE project_id = $1 AND id = ANY($2::text[])', [projectId, ids]);
}

export async function deleteExtension(db: Db, projectId: string, id: string): Promise<ExtensionRow | undefined> {
  const [row] = await db.query<ExtensionRow>('DELETE FROM extensions WHERE project_id = $1 AND id = $2 RETURNING *', [projectId, id]);
  return row;
}
