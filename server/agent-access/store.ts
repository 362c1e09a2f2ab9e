// Agent-access rows: challenges (agent_access_challenges) and the projects the flow creates.
// Times come from the database's clock only, so issuing and checking a token agree even
// when several nodes share one PostgreSQL.
import type { Db } from '../store/db.js';
import { createProject } from '../auth/api-keys.js';

export async function insertChallenge(
  db: Db,
  row: { id: string; type: string; tokenHash: string; answerHash: string; ttlSeconds: number },
): Promise<{ expiresAt: Date }> {
  const [r] = await db.query<{ expires_at: Date | string }>(
    `INSERT INTO agent_access_challenges (token_hash, id, type, answer_hash, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5::int))
     RETURNING expires_at`,
    [row.tokenHash, row.id, row.type, row.answerHash, row.ttlSeconds],
  );
  return { expiresAt: new Date(r.expires_at) };
}

/** Drops challenges that expired more than a day ago; until then they answer "expired". */
export async function sweepChallenges(db: Db): Promise<number> {
  const rows = await db.query(`DELETE FROM agent_access_challenges WHERE expires_at < now() - interval '1 day' RETURNING id`);
  return rows.length;
}

export type Redemption = { outcome: 'unknown' | 'used' | 'expired' | 'wrong' } | { outcome: 'issued'; projectId: string; apiKey: string; credits: number };

/**
 * Spends the challenge of `tokenHash` (whatever the answer: a token answers once) and, when
 * it is in time and `check` accepts its stored answer hash, creates the project and its key,
 * all in one transaction. Two concurrent redemptions of one token: the row lock lets one
 * through; the other finds the token used.
 */
export function redeemChallenge(
  db: Db,
  options: {
    tokenHash: string;
    check(answerHash: string): boolean;
    credits: number;
    maxSessionMinutes: number;
  },
): Promise<Redemption> {
  return db.transaction(async (tx): Promise<Redemption> => {
    const [row] = await tx.query<{ answer_hash: string; expired: boolean }>(
      `UPDATE agent_access_challenges SET used_at = now()
       WHERE token_hash = $1 AND used_at IS NULL
       RETURNING answer_hash, expires_at <= now() AS expired`,
      [options.tokenHash],
    );
    if (!row) {
      const seen = await tx.query('SELECT 1 FROM agent_access_challenges WHERE token_hash = $1', [options.tokenHash]);
      return { outcome: seen.length ? 'used' : 'unknown' };
    }
    if (row.expired) return { outcome: 'expired' };
    if (!options.check(row.answer_hash)) return { outcome: 'wrong' };
    // Inside a transaction, createProject's own transaction runs inline on `tx`.
    const { projectId, key } = await createProject(tx, { name: 'agent-access', source: 'agent-access', giftCredits: options.credits });
    // Tier agent-access: no included credits, the gift only (server/credits/account.ts).
    await tx.query(`UPDATE projects SET max_session_minutes = $2, tier = 'agent-access' WHERE id = $1`, [projectId, options.maxSessionMinutes]);
    return { outcome: 'issued', projectId, apiKey: key, credits: options.credits };
  });
}
