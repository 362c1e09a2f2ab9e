// The session_downloads table: one row a kept download, its file in blob storage. Every
// query names the project: another project's session or download is not found.
import type { Db } from '../store/db.js';

export interface DownloadRow {
  id: string;
  project_id: string;
  session_id: string;
  storage_key: string;
  file_name: string;
  original_file_name: string;
  url: string | null;
  origin_url: string | null;
  size_bytes: number;
  duration_ms: number;
  created_at: Date;
}

/** Whether the project has the session, in any state (an ended one's downloads stay). */
export async function hasSession(db: Db, projectId: string, sessionId: string): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM sessions WHERE project_id = $1 AND id = $2', [projectId, sessionId]);
  return rows.length > 0;
}

export async function insertDownload(db: Db, r: Omit<DownloadRow, 'created_at'>): Promise<DownloadRow> {
  const [row] = await db.query<DownloadRow>(
    `INSERT INTO session_downloads (id, project_id, session_id, storage_key, file_name, original_file_name, url, origin_url, size_bytes, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
    [r.id, r.project_id, r.session_id, r.storage_key, r.file_name, r.original_file_name, r.url, r.origin_url, r.size_bytes, r.duration_ms],
  );
  return row!;
}

export async function listDownloads(db: Db, projectId: string, sessionId: string): Promise<DownloadRow[]> {
  return db.query<DownloadRow>('SELECT * FROM session_downloads WHERE project_id = $1 AND session_id = $2 ORDER BY created_at, id', [projectId, sessionId]);
}

export async function findDownload(db: Db, projectId: string, sessionId: string, id: string): Promise<DownloadRow | undefined> {
  const [row] = await db.query<DownloadRow>('SELECT * FROM session_downloads WHERE project_id = $1 AND session_id = $2 AND id = $3', [
    projectId,
    sessionId,
    id.toLowerCase(),
  ]);
  return row;
}

export async function deleteDownload(db: Db, projectId: string, sessionId: string, id: string): Promise<DownloadRow | undefined> {
  const [row] = await db.query<DownloadRow>('DELETE FROM session_downloads WHERE project_id = $1 AND session_id = $2 AND id = $3 RETURNING *', [
    projectId,
    sessionId,
    id.toLowerCase(),
  ]);
  return row;
}
