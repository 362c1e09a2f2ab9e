// The applications, auth_flows and identities tables, and the identities column of a
// session. Every query names the project: another project's rows are not found.
import type { components } from '../../generated/types.js';
import type { Db } from '../store/db.js';
import type { SealedCredentials } from './credentials.js';

type Schemas = components['schemas'];
export type CredentialMethod = Schemas['CredentialMethod'];
export type IdentityStatus = Schemas['IdentityStatus'];
export type AuthFlowLogin = Schemas['AuthFlowLogin'];
export type SessionIdentityProgress = Schemas['SessionIdentityProgress'];
export type FailureType = NonNullable<SessionIdentityProgress['failure_type']>;
export type FailureReason = NonNullable<SessionIdentityProgress['failure_reason']>;

export interface ApplicationRow {
  id: string;
  project_id: string;
  name: string;
  url: string;
  description: string | null;
  allowed_domains: string[];
  created_at: Date;
  updated_at: Date;
}

export interface ApplicationSummary extends ApplicationRow {
  identity_count: number;
  auth_methods: CredentialMethod[];
}

export interface AuthFlowRow {
  id: string;
  project_id: string;
  application_id: string;
  name: string;
  description: string | null;
  is_recommended: boolean;
  methods: CredentialMethod[];
  custom_fields: { name: string }[];
  login: AuthFlowLogin;
  created_at: Date;
  updated_at: Date;
}

export interface IdentityRow {
  id: string;
  project_id: string;
  application_id: string;
  name: string;
  source: string;
  status: IdentityStatus;
  metadata: Record<string, unknown>;
  credentials: SealedCredentials;
  auth_flow_id: string | null;
  failure_type: FailureType | null;
  failure_message: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface Page {
  page: number;
  limit: number;
}

const pageClause = (page: Page | undefined, next: number) => (page ? ` LIMIT $${next} OFFSET $${next + 1}` : '');
const pageParams = (page: Page | undefined) => (page ? [page.limit, (page.page - 1) * page.limit] : []);
const like = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

// ---- applications

const SUMMARY = `SELECT a.*,
    (SELECT count(*) FROM identities i WHERE i.application_id = a.id) AS identity_count,
    COALESCE((SELECT jsonb_agg(DISTINCT m) FROM auth_flows f, jsonb_array_elements_text(f.methods) m WHERE f.application_id = a.id), '[]'::jsonb) AS auth_methods
  FROM applications a`;

export async function insertApplication(
  db: Db,
  a: { id: string; projectId: string; name: string; url: string; description?: string | null },
): Promise<ApplicationRow> {
  const [row] = await db.query<ApplicationRow>('INSERT INTO applications (id, project_id, name, url, description) VALUES ($1, $2, $3, $4, $5) RETURNING *', [
    a.id,
    a.projectId,
    a.name,
    a.url,
    a.description ?? null,
  ]);
  return row!;
}

export async function getApplication(db: Db, projectId: string, id: string): Promise<ApplicationSummary | undefined> {
  const [row] = await db.query<ApplicationSummary>(`${SUMMARY} WHERE a.project_id = $1 AND a.id = $2`, [projectId, id]);
  return row;
}

export async function listApplications(
  db: Db,
  projectId: string,
  search: string | undefined,
  page?: Page,
): Promise<{ total: number; items: ApplicationSummary[] }> {
  const where = `WHERE a.project_id = $1${search ? ` AND a.name ILIKE $2` : ''}`;
  const params: unknown[] = search ? [projectId, like(search)] : [projectId];
  const [count] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM applications a ${where}`, params);
  const items = await db.query<ApplicationSummary>(`${SUMMARY} ${where} ORDER BY a.created_at DESC, a.id${pageClause(page, params.length + 1)}`, [
    ...params,
    ...pageParams(page),
  ]);
  return { total: Number(count?.n ?? 0), items };
}

/**
 * The project's application of an identity's login page `source`: the one with that very
 * login page, else the oldest of that origin (one web app, several login pages).
 */
export async function applicationForSource(db: Db, projectId: string, source: string): Promise<ApplicationRow | undefined> {
  const rows = await db.query<ApplicationRow>('SELECT * FROM applications WHERE project_id = $1 ORDER BY created_at, id', [projectId]);
  const origin = new URL(source).origin;
  return rows.find((r) => r.url === source) ?? rows.find((r) => new URL(r.url).origin === origin);
}

export async function updateApplication(
  db: Db,
  projectId: string,
  id: string,
  change: { name?: string; description?: string | null; allowed_domains?: string[] },
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE applications SET
       name = COALESCE($3, name),
       description = CASE WHEN $4 THEN $5 ELSE description END,
       allowed_domains = COALESCE($6::jsonb, allowed_domains),
       updated_at = now()
     WHERE project_id = $1 AND id = $2 RETURNING id`,
    [
      projectId,
      id,
      change.name ?? null,
      change.description !== undefined,
      change.description ?? null,
      change.allowed_domains ? JSON.stringify(change.allowed_domains) : null,
    ],
  );
  return rows.length > 0;
}

/** Deletes the application and its flows unless identities use it: answers how many do (then nothing is deleted), or undefined when not found. */
export async function deleteApplication(db: Db, projectId: string, id: string): Promise<{ identities: number } | undefined> {
  return db.transaction(async (tx) => {
    const [app] = await tx.query<{ id: string }>('SELECT id FROM applications WHERE project_id = $1 AND id = $2 FOR UPDATE', [projectId, id]);
    if (!app) return undefined;
    const [count] = await tx.query<{ n: number }>('SELECT count(*) AS n FROM identities WHERE application_id = $1', [id]);
    const identities = Number(count?.n ?? 0);
    if (identities === 0) await tx.query('DELETE FROM applications WHERE id = $1', [id]);
    return { identities };
  });
}

// ---- authentication flows

export async function insertAuthFlow(db: Db, f: Omit<AuthFlowRow, 'created_at' | 'updated_at'>): Promise<AuthFlowRow> {
  return db.transaction(async (tx) => {
    if (f.is_recommended) await tx.query('UPDATE auth_flows SET is_recommended = false WHERE application_id = $1', [f.application_id]);
    const [row] = await tx.query<AuthFlowRow>(
      `INSERT INTO auth_flows (id, project_id, application_id, name, description, is_recommended, methods, custom_fields, login)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
      [
        f.id,
        f.project_id,
        f.application_id,
        f.name,
        f.description,
        f.is_recommended,
        JSON.stringify(f.methods),
        JSON.stringify(f.custom_fields),
        JSON.stringify(f.login),
      ],
    );
    await tx.query('UPDATE applications SET updated_at = now() WHERE id = $1', [f.application_id]);
    return row!;
  });
}

export async function listAuthFlows(db: Db, projectId: string, applicationId: string): Promise<AuthFlowRow[]> {
  return db.query<AuthFlowRow>('SELECT * FROM auth_flows WHERE project_id = $1 AND application_id = $2 ORDER BY created_at, id', [projectId, applicationId]);
}

export async function getAuthFlow(db: Db, projectId: string, applicationId: string, id: string): Promise<AuthFlowRow | undefined> {
  const [row] = await db.query<AuthFlowRow>('SELECT * FROM auth_flows WHERE project_id = $1 AND application_id = $2 AND id = $3', [
    projectId,
    applicationId,
    id,
  ]);
  return row;
}

/** Writes the whole flow as given (the handler merged the change). */
export async function replaceAuthFlow(db: Db, f: AuthFlowRow): Promise<AuthFlowRow> {
  return db.transaction(async (tx) => {
    if (f.is_recommended) await tx.query('UPDATE auth_flows SET is_recommended = false WHERE application_id = $1 AND id <> $2', [f.application_id, f.id]);
    const [row] = await tx.query<AuthFlowRow>(
      `UPDATE auth_flows SET name = $2, description = $3, is_recommended = $4, methods = $5, custom_fields = $6, login = $7, updated_at = now()
       WHERE id = $1 RETURNING *`,
      [f.id, f.name, f.description, f.is_recommended, JSON.stringify(f.methods), JSON.stringify(f.custom_fields), JSON.stringify(f.login)],
    );
    return row!;
  });
}

export async function deleteAuthFlow(db: Db, projectId: string, applicationId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM auth_flows WHERE project_id = $1 AND application_id = $2 AND id = $3 RETURNING id', [projectId, applicationId, id]);
  return rows.length > 0;
}

// ---- identities

export async function insertIdentity(
  db: Db,
  i: { id: string; projectId: string; applicationId: string; name: string; source: string; metadata: Record<string, unknown>; credentials: SealedCredentials },
): Promise<IdentityRow> {
  const [row] = await db.query<IdentityRow>(
    `INSERT INTO identities (id, project_id, application_id, name, source, status, metadata, credentials)
     VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7) RETURNING *`,
    [i.id, i.projectId, i.applicationId, i.name, i.source, JSON.stringify(i.metadata), JSON.stringify(i.credentials)],
  );
  return row!;
}

export async function getIdentity(db: Db, projectId: string, id: string): Promise<IdentityRow | undefined> {
  const [row] = await db.query<IdentityRow>('SELECT * FROM identities WHERE project_id = $1 AND id = $2', [projectId, id]);
  return row;
}

export async function findIdentities(db: Db, projectId: string, ids: string[]): Promise<IdentityRow[]> {
  if (ids.length === 0) return [];
  return db.query<IdentityRow>('SELECT * FROM identities WHERE project_id = $1 AND id = ANY($2::text[])', [projectId, ids]);
}

export interface IdentityFilter {
  applicationId?: string;
  status?: IdentityStatus;
  search?: string;
  metadata?: Record<string, unknown>;
}

export async function listIdentities(db: Db, projectId: string, f: IdentityFilter, page?: Page): Promise<{ total: number; items: IdentityRow[] }> {
  const params: unknown[] = [projectId];
  const where = ['project_id = $1'];
  const add = (sql: (n: number) => string, value: unknown) => {
    params.push(value);
    where.push(sql(params.length));
  };
  if (f.applicationId) add((n) => `application_id = $${n}`, f.applicationId);
  if (f.status) add((n) => `status = $${n}`, f.status);
  if (f.search) add((n) => `name ILIKE $${n}`, like(f.search));
  if (f.metadata && Object.keys(f.metadata).length) add((n) => `metadata @> $${n}::jsonb`, JSON.stringify(f.metadata));
  const clause = where.join(' AND ');
  const [count] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM identities WHERE ${clause}`, params);
  const items = await db.query<IdentityRow>(`SELECT * FROM identities WHERE ${clause} ORDER BY created_at DESC, id${pageClause(page, params.length + 1)}`, [
    ...params,
    ...pageParams(page),
  ]);
  return { total: Number(count?.n ?? 0), items };
}

/** Name, metadata, and new credentials (which make it pending again). */
export async function updateIdentity(
  db: Db,
  projectId: string,
  id: string,
  change: { name?: string; metadata?: Record<string, unknown>; credentials?: SealedCredentials },
): Promise<IdentityRow | undefined> {
  const [row] = await db.query<IdentityRow>(
    `UPDATE identities SET
       name = COALESCE($3, name),
       metadata = COALESCE($4::jsonb, metadata),
       credentials = COALESCE($5::jsonb, credentials),
       status = CASE WHEN $5::jsonb IS NULL THEN status ELSE 'pending' END,
       failure_type = CASE WHEN $5::jsonb IS NULL THEN failure_type ELSE NULL END,
       failure_message = CASE WHEN $5::jsonb IS NULL THEN failure_message ELSE NULL END,
       updated_at = now()
     WHERE project_id = $1 AND id = $2 RETURNING *`,
    [
      projectId,
      id,
      change.name ?? null,
      change.metadata ? JSON.stringify(change.metadata) : null,
      change.credentials ? JSON.stringify(change.credentials) : null,
    ],
  );
  return row;
}

export async function deleteIdentity(db: Db, projectId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM identities WHERE project_id = $1 AND id = $2 RETURNING id', [projectId, id]);
  return rows.length > 0;
}

/** The outcome of a login; false when the identity was deleted meanwhile. */
export async function setOutcome(
  db: Db,
  id: string,
  outcome: { status: 'active' } | { status: 'failed'; failureType: FailureType; message: string },
): Promise<boolean> {
  const failed = outcome.status === 'failed';
  const rows = await db.query(`UPDATE identities SET status = $2, failure_type = $3, failure_message = $4, updated_at = now() WHERE id = $1 RETURNING id`, [
    id,
    outcome.status,
    failed ? outcome.failureType : null,
    failed ? outcome.message : null,
  ]);
  return rows.length > 0;
}

// ---- a session's identities

export async function setSessionProgress(db: Db, sessionId: string, progress: SessionIdentityProgress[]): Promise<void> {
  await db.query('UPDATE sessions SET identities = $2::jsonb WHERE id = $1', [sessionId, JSON.stringify(progress)]);
}

/**
 * Logins a killed server left `authenticating` on sessions that have ended since: they
 * failed. Answers how many sessions were corrected.
 */
export async function failInterrupted(db: Db): Promise<number> {
  const rows = await db.query<{ id: string; identities: SessionIdentityProgress[] }>(
    `SELECT id, identities FROM sessions
      WHERE identities IS NOT NULL AND status IN ('completed', 'failed') AND identities::text LIKE '%"authenticating"%'`,
  );
  for (const row of rows) {
    const progress = row.identities.map(
      (p): SessionIdentityProgress =>
        p.status === 'authenticating'
          ? { ...p, status: 'failed', failure_type: 'automation_failure', error_message: 'The server stopped before the login finished' }
          : p,
    );
    await setSessionProgress(db, row.id, progress);
  }
  return rows.length;
}
