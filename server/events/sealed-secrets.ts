// A webhook's signing secrets at rest: sealed (secrets/seal.ts) in `webhooks.secret` and
// `webhooks.previous_secret`, so a copy of the database cannot sign events its receivers
// would trust. One context for both columns: a rotation moves the sealed value from one to
// the other in SQL. Secrets stored before they were sealed (a plain `whsec_` value) are
// still read, and sealed at the next start (sealStoredSecrets).
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { SECRET_PREFIX } from './signing.js';

const context = (webhookId: string) => `webhook:${webhookId}:signing-secret`;

export function sealSecret(secrets: Secrets, webhookId: string, plain: string): string {
  return secrets.seal(plain, context(webhookId));
}

/** The plain secret; throws when the stored value was altered or sealed for another webhook. */
export function openSecret(secrets: Secrets, webhookId: string, stored: string): string {
  return stored.startsWith(SECRET_PREFIX) ? stored : secrets.open(stored, context(webhookId));
}

/** Opened signing secrets kept at most by an opener (all are dropped past it, and opened again as needed). */
const MAX_OPENED = 4096;

/**
 * openSecret for a delivery worker: each webhook's stored value is opened once, not per
 * attempt (a rotation stores a new value, so it is opened anew).
 */
export function secretOpener(secrets: Secrets): (webhookId: string, stored: string) => string {
  const opened = new Map<string, string>();
  return (webhookId, stored) => {
    const key = `${webhookId} ${stored}`;
    let plain = opened.get(key);
    if (plain === undefined) {
      if (opened.size >= MAX_OPENED) opened.clear();
      plain = openSecret(secrets, webhookId, stored);
      opened.set(key, plain);
    }
    return plain;
  };
}

/**
 * Seals the secrets still stored plain; answers how many webhooks it sealed. Each row is
 * written only if it still holds what was read, so nodes starting together seal it once
 * and a rotation meanwhile is not undone.
 */
export async function sealStoredSecrets(db: Db, secrets: Secrets): Promise<number> {
  const plain = `${SECRET_PREFIX.replace('_', '\\_')}%`;
  const rows = await db.query<{ id: string; secret: string; previous_secret: string | null }>(
    'SELECT id, secret, previous_secret FROM webhooks WHERE secret LIKE $1 OR previous_secret LIKE $1',
    [plain],
  );
  let sealed = 0;
  for (const r of rows) {
    const seal = (v: string | null) => (v === null || !v.startsWith(SECRET_PREFIX) ? v : sealSecret(secrets, r.id, v));
    const done = await db.query(
      'UPDATE webhooks SET secret = $2, previous_secret = $3 WHERE id = $1 AND secret = $4 AND previous_secret IS NOT DISTINCT FROM $5 RETURNING id',
      [r.id, seal(r.secret), seal(r.previous_secret), r.secret, r.previous_secret],
    );
    sealed += done.length;
  }
  return sealed;
}
