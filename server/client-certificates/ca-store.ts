// The ca_certificates table: one row a CA certificate a project's sessions trust.
import type { Db } from '../store/db.js';

export interface CaCertificateRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  certificate_pem: string;
  created_at: Date;
}

/** The row, or undefined when the project has a certificate of that name already. */
export async function insertCaCertificate(db: Db, row: Omit<CaCertificateRow, 'created_at'>): Promise<CaCertificateRow | undefined> {
  const [inserted] = await db.query<CaCertificateRow>(
    `INSERT INTO ca_certificates (id, project_id, name, description, certificate_pem) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (project_id, name) DO NOTHING RETURNING *`,
    [row.id, row.project_id, row.name, row.description, row.certificate_pem],
  );
  return inserted;
}

/** Every CA certificate of the project, newest first (the listing and a session's launch). */
export async function projectCaCertificates(db: Db, projectId: string): Promise<CaCertificateRow[]> {
  return db.query<CaCertificateRow>('SELECT * FROM ca_certificates WHERE project_id = $1 ORDER BY created_at DESC, id', [projectId]);
}

export async function hasCaCertificates(db: Db, projectId: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM ca_certificates WHERE project_id = $1 LIMIT 1', [projectId])).length > 0;
}

export async function deleteCaCertificate(db: Db, projectId: string, name: string): Promise<boolean> {
  return (await db.query('DELETE FROM ca_certificates WHERE project_id = $1 AND name = $2 RETURNING id', [projectId, name])).length > 0;
}
