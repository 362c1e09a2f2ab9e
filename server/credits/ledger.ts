// The usage ledger (table usage_ledger, migration 005): one row per charge to a project.
// Every credit a project spends is a row here: a settled session (kind 'session', once per
// session), each web fetch answered 200 (kind 'fetch') and the steps of a perform-web-task
// (kind 'agent_step', once per run). Balances and period usage are
// sums over it; the per-period series of GET /v1/billing comes from the sessions instead
// (bucketed by creation time), which is why web-fetch credits are not in that series.
import { randomUUID } from 'node:crypto';
import type { Db } from '../store/db.js';

export type ChargeKind = 'session' | 'fetch' | 'agent_step';

export interface Charge {
  projectId: string;
  kind: ChargeKind;
  credits: number;
  sessionId?: string;
}

/** Records a charge. A session is charged once: a second charge for it is ignored. Pass the
 * transaction of the state change behind the charge, so both commit together. */
export async function charge(db: Db, c: Charge): Promise<void> {
  if (!(c.credits >= 0) || !Number.isFinite(c.credits)) throw new RangeError(`a charge is a finite number of credits >= 0, not ${c.credits}`);
  await db.query(
    `INSERT INTO usage_ledger (id, project_id, kind, credits, session_id) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING`,
    [randomUUID(), c.projectId, c.kind, c.credits, c.sessionId ?? null],
  );
}

/** Credits charged to a project in [from, to). */
export async function usageBetween(db: Db, projectId: string, from: Date, to: Date): Promise<number> {
  const [row] = await db.query<{ credits: number }>(
    'SELECT COALESCE(sum(credits), 0)::float8 AS credits FROM usage_ledger WHERE project_id = $1 AND created_at >= $2 AND created_at < $3',
    [projectId, from.toISOString(), to.toISOString()],
  );
  return row.credits;
}

/** Credits charged to a project per calendar month (UTC), oldest first. */
export async function usageByMonth(db: Db, projectId: string): Promise<{ month: Date; credits: number }[]> {
  return db.query<{ month: Date; credits: number }>(
    `SELECT (date_trunc('month', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS month, sum(credits)::float8 AS credits
       FROM usage_ledger WHERE project_id = $1 GROUP BY 1 ORDER BY 1`,
    [projectId],
  );
}
