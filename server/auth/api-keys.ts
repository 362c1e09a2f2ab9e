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

export async function findKey(db: Db, key: string): Promise<KeyOwner | undefined> {
  const rows = await db.query<{ id: string; project_id: string }>(
    'SELECT id, project_id FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL',
    [hashKey(key)],
  );
  return rows[0] ? { apiKeyId: rows[0].id, projectId: rows[0].project_id } : undefined;
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
    await tx.query('INSERT INTO projects (id, name, gift_credits) VALUES ($1, $2, $3)', [
      projectId,
      options.name,
      options.giftCredits ?? 0,
    ]);
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
