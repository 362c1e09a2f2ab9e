// The profiles table: one row a saved browser state of a project, addressed by its name,
// its compressed user-data directory in blob storage.
import type { Db } from '../store/db.js';

export type ProfileStatus = 'pending' | 'ready' | 'failed';

export interface ProfileRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  status: ProfileStatus;
  failure_reason: string | null;
  session_id: string | null;
  dedicated_sticky_ip: boolean;
  sticky_proxy_id: string | null;
  storage_key: string | null;
  size_bytes: number | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewProfile {
  id: string;
  projectId: string;
  name: string;
  description?: string;
  sessionId: string;
  dedicatedStickyIp: boolean;
  /** The source session's service proxy, kept when dedicatedStickyIp. */
  stickyProxyId?: string;
}

/** Inserts a pending profile; undefined when the project already has one of this name. */
export async function insertPending(db: Db, p: NewProfile): Promise<ProfileRow | undefined> {
  const [row] = await db.query<ProfileRow>(
    `INSERT INTO profiles (id, project_id, name, description, status, session_id, dedicated_sticky_ip, sticky_proxy_id)
     VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7)
     ON CONFLICT (project_id, name) DO NOTHING RETURNING *`,
    [p.id, p.projectId, p.name, p.description ?? null, p.sessionId, p.dedicatedStickyIp, p.dedicatedStickyIp ? (p.stickyProxyId ?? null) : null],
  );
  return row;
}

/**
 * Inserts an empty profile, ready at once with nothing stored (no session, no storage key):
 * sessions start fresh with it until one persists into it. Undefined when the name is taken.
 */
export async function insertEmpty(db: Db, p: Omit<NewProfile, 'sessionId' | 'stickyProxyId'>): Promise<ProfileRow | undefined> {
  const [row] = await db.query<ProfileRow>(
    `INSERT INTO profiles (id, project_id, name, description, status, dedicated_sticky_ip)
     VALUES ($1, $2, $3, $4, 'ready', $5)
     ON CONFLICT (project_id, name) DO NOTHING RETURNING *`,
    [p.id, p.projectId, p.name, p.description ?? null, p.dedicatedStickyIp],
  );
  return row;
}

export async function getProfile(db: Db, projectId: string, name: string): Promise<ProfileRow | undefined> {
  const [row] = await db.query<ProfileRow>('SELECT * FROM profiles WHERE project_id = $1 AND name = $2', [projectId, name]);
  return row;
}

export async function listProfiles(db: Db, projectId: string, page: number, limit: number): Promise<{ count: number; items: ProfileRow[] }> {
  const [total] = await db.query<{ count: number }>('SELECT count(*) AS count FROM profiles WHERE project_id = $1', [projectId]);
  const items = await db.query<ProfileRow>('SELECT * FROM profiles WHERE project_id = $1 ORDER BY created_at DESC, id LIMIT $2 OFFSET $3', [
    projectId,
    limit,
    (page - 1) * limit,
  ]);
  return { count: Number(total?.count ?? 0), items };
}

export async function deleteProfile(db: Db, projectId: string, name: string): Promise<ProfileRow | undefined> {
  const [row] = await db.query<ProfileRow>('DELETE FROM profiles WHERE project_id = $1 AND name = $2 RETURNING *', [projectId, name]);
  return row;
}

/** The service proxy a sticky profile's sessions keep from now on. */
export async function setStickyProxy(db: Db, id: string, proxyId: string): Promise<void> {
  await db.query('UPDATE profiles SET sticky_proxy_id = $2 WHERE id = $1 AND dedicated_sticky_ip', [id, proxyId]);
}

/** The pending profiles made from a session: what its end must save. */
export async function pendingFor(db: Db, sessionId: string): Promise<ProfileRow[]> {
  return await db.query<ProfileRow>(`SELECT * FROM profiles WHERE session_id = $1 AND status = 'pending'`, [sessionId]);
}

/**
 * Points the profile at a newly written object and makes it ready; answers the object it
 * replaces (to delete), or undefined with `found: false` when the profile was deleted
 * meanwhile (then the new object is the one to delete).
 */
export async function markSaved(db: Db, id: string, storageKey: string, sizeBytes: number): Promise<{ found: boolean; replaced?: string }> {
  return db.transaction(async (tx) => {
    const [row] = await tx.query<{ storage_key: string | null }>('SELECT storage_key FROM profiles WHERE id = $1 FOR UPDATE', [id]);
    if (!row) return { found: false };
    await tx.query(`UPDATE profiles SET status = 'ready', storage_key = $2, size_bytes = $3, failure_reason = NULL, updated_at = now() WHERE id = $1`, [
      id,
      storageKey,
      sizeBytes,
    ]);
    return { found: true, replaced: row.storage_key ?? undefined };
  });
}

/** A pending profile whose save failed; a ready one keeps its previous state. */
export async function markFailed(db: Db, id: string, reason: string): Promise<void> {
  await db.query(`UPDATE profiles SET status = 'failed', failure_reason = $2, updated_at = now() WHERE id = $1 AND status = 'pending'`, [id, reason]);
}

/**
 * Pending profiles whose session ended on this node without being saved: a server killed
 * before their save. They fail with the reason; answers how many.
 */
export async function failOrphans(db: Db, nodeId: string, reason: string, before?: Date): Promise<number> {
  // `before`: a node claimed dead by another; only its sessions made before the claim (a
  // restart with the same id may be saving a newer session's profile right now).
  const rows = await db.query(
    `UPDATE profiles p SET status = 'failed', failure_reason = $2, updated_at = now()
     FROM sessions s
     WHERE p.status = 'pending' AND p.session_id = s.id AND s.node_id = $1 AND s.status IN ('completed', 'failed')
       AND ($3::timestamptz IS NULL OR s.created_at < $3)
     RETURNING p.id`,
    [nodeId, reason, before ?? null],
  );
  return rows.length;
}
