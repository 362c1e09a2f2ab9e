// The client_certificates table: one row an uploaded certificate of a project.
import type { Db } from '../store/db.js';

export interface ClientCertificateRow {
  id: string;
  project_id: string;
  name: string;
  origin: string;
  format: 'pkcs12' | 'pem';
  subject: string;
  issuer: string;
  not_before: Date;
  not_after: Date;
  fingerprint_sha256: string;
  certificate_pem: string;
  sealed_bundle: string;
  created_at: Date;
}

export async function insertClientCertificate(db: Db, row: Omit<ClientCertificateRow, 'created_at'>): Promise<ClientCertificateRow> {
  const [inserted] = await db.query<ClientCertificateRow>(
    `INSERT INTO client_certificates (id, project_id, name, origin, format, subject, issuer, not_before, not_after, fingerprint_sha256, certificate_pem, sealed_bundle)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
    [
      row.id,
      row.project_id,
      row.name,
      row.origin,
      row.format,
      row.subject,
      row.issuer,
      row.not_before,
      row.not_after,
      row.fingerprint_sha256,
      row.certificate_pem,
      row.sealed_bundle,
    ],
  );
  return inserted!;
}

/** A page of the project's certificates, newest first, and how many it has. */
export async function listClientCertificates(
  db: Db,
  projectId: string,
  page: { page: number; limit: number },
): Promise<{ rows: ClientCertificateRow[]; total: number }> {
  const rows = await db.query<ClientCertificateRow>('SELECT * FROM client_certificates WHERE project_id = $1 ORDER BY created_at DESC, id LIMIT $2 OFFSET $3', [
    projectId,
    page.limit,
    (page.page - 1) * page.limit,
  ]);
  const [count] = await db.query<{ n: string | number }>('SELECT count(*) AS n FROM client_certificates WHERE project_id = $1', [projectId]);
  return { rows, total: Number(count?.n ?? 0) };
}

/** Every certificate of the project, for a session's launch. */
export async function projectClientCertificates(db: Db, projectId: string): Promise<ClientCertificateRow[]> {
  return db.query<ClientCertificateRow>('SELECT * FROM client_certificates WHERE project_id = $1 ORDER BY created_at DESC, id', [projectId]);
}

/** Whether the project has a certificate a session would present (one not expired). */
export async function hasClientCertificates(db: Db, projectId: string): Promise<boolean> {
  const rows = await db.query<{ one: number }>('SELECT 1 AS one FROM client_certificates WHERE project_id = $1 AND not_after > now() LIMIT 1', [projectId]);
  return rows.length > 0;
}

export async function getClientCertificate(db: Db, projectId: string, id: string): Promise<ClientCertificateRow | undefined> {
  const [row] = await db.query<ClientCertificateRow>('SELECT * FROM client_certificates WHERE project_id = $1 AND id = $2', [projectId, id]);
  return row;
}

export async function deleteClientCertificate(db: Db, projectId: string, id: string): Promise<boolean> {
  const rows = await db.query<{ id: string }>('DELETE FROM client_certificates WHERE project_id = $1 AND id = $2 RETURNING id', [projectId, id]);
  return rows.length > 0;
}
