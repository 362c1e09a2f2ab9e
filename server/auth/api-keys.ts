// API keys: random, shown once, stored as SHA-256 hashes, each scoped to one project.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../store/db.js';

export const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');
export const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;

export function newApiKey(): string {
  return `sk_${randomBytes(32).toString('base64url')}`;
}

export interface KeyOwner {
  apiKeyId: string;
  projectId: string;
}

/** How stale a key's recorded last use may get: authentication writes at most this often per key. */
const LAST_USE_RESOLUTION_MS = 60_000;

/**
 * The key's owner, read from the database on every call: nothing is cached, so a revoked
 * key is refused at once on every node sharing the database.
 */
export async function findKey(db: Db, key: string): Promise<KeyOwner | undefined> {
  const rows = await db.query<{ id: string; project_id: string; last_used_at: Date | null }>(
    'SELECT id, project_id, last_used_at FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashKey(key)],
  );
  const row = rows[0];
  if (!row) return undefined;
  if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() >= LAST_USE_RESOLUTION_MS) {
    await db.query('UPDATE api_keys SET last_used_at = now() WHERE id = $1', [row.id]);
  }
  return { apiKeyId: row.id, projectId: row.project_id };
}

/** Creates a project with one key; `key` is stored as given (bootstrap) or made here. */
export async function createProject(
  db: Db,
  options: { name: string; source: string; key?: string; giftCredits?: number },
): Promise<KeyOwner & { key: string }> {
  const key = options.key ?? newApiKey();
  const projectId = randomUUID();
  const apiKeyId = newId('key');
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO projects (id, name, gift_credits) VALUES ($1, $2, $3)', [projectId, options.name, options.giftCredits ?? 0]);
    await tx.query('INSERT INTO api_keys (id, project_id, key_hash, prefix, source) VALUES ($1, $2, $3, $4, $5)', [
      apiKeyId,
      projectId,
      hashKey(key),
      key.slice(0, 7),
      options.source,
    ]);
  });
  return { key, projectId, apiKeyId };
}

/**
 * BOOTSTRAP_API_KEY makes sure that key exists. Without it, the very first start makes a
 * key and returns it so the caller can print it once; later starts return nothing.
 */
export async function bootstrapKey(db: Db, configured: string | undefined): Promise<{ created: boolean; key?: string }> {
  if (configured) {
    if (await findKey(db, configured)) return { created: false };
    await createProject(db, { name: 'default', source: 'bootstrap', key: configured });
    return { created: true };
  }
  const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys');
  if (n > 0) return { created: false };
  const { key } = await createProject(db, { name: 'default', source: 'first-start' });
  return { created: true, key };
}
