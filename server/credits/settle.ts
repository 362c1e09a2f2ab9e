// Session settlement: when a session ends, its credits are computed from the price table,
// written to sessions.credits_used and charged to the ledger, in the transaction that
// records the end (SessionManager.recordEnd), so a session is charged exactly once.
import type { Config } from '../config/config.js';
import type { Db } from '../store/db.js';
import { charge } from './ledger.js';
import { priceTable, sessionCredits } from './prices.js';

export interface EndedSession {
  id: string;
  project_id: string;
  created_at: Date;
  /** Null when the browser never ran (launch failed, or a restart came first): no charge for time. */
  started_at: Date | null;
  ended_at: Date | null;
  proxy_bytes: number;
  screenshots: number;
}

type PriceConfig = Pick<Config, 'pricePerBrowserMinute' | 'pricePerProxyGb' | 'pricePerScreenshot'>;

/** Settles an ended session inside `tx`; answers its credits. */
export async function settleSession(tx: Db, row: EndedSession, config: PriceConfig): Promise<number> {
  const ran = row.started_at !== null && row.ended_at !== null;
  const credits = sessionCredits(
    {
      durationMs: ran ? new Date(row.ended_at!).getTime() - new Date(row.created_at).getTime() : 0,
      proxyBytes: Number(row.proxy_bytes),
      screenshots: Number(row.screenshots),
    },
    priceTable(config),
  );
  await tx.query('UPDATE sessions SET credits_used = $2 WHERE id = $1', [row.id, credits]);
  if (credits > 0) await charge(tx, { projectId: row.project_id, kind: 'session', credits, sessionId: row.id });
  return credits;
}
