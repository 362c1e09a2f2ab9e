// A session's end, recorded once: its row marked ended with the traffic and steps it used,
// its credits settled, and session.completed or session.failed written to the outbox, all
// in one transaction, so the event exists exactly when the end does.
import type { EndReason } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { settleSession } from '../credits/settle.js';
import { emitEvent } from '../outbox/emit.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';
import { sessionDashboardUrl } from '../outbox/links.js';

export interface SessionUsage {
  networkBytes: number;
  proxyBytes: number;
  domains: string[];
  steps: number;
  screenshots: number;
}

/** Marks the row ended and records its event, once; undefined when it had already ended. */
export async function recordEnd(
  o: { db: Db; config: ServiceConfig },
  id: string,
  status: 'completed' | 'failed',
  reason: EndReason,
  usage: SessionUsage | undefined,
  deleted: boolean,
): Promise<store.SessionRow | undefined> {
  return o.db.transaction(async (tx) => {
    const row = await store.endSessionRow(tx, id, {
      status,
      reason,
      proxyBytes: usage?.proxyBytes ?? 0,
      networkBytes: usage?.networkBytes ?? 0,
      steps: usage?.steps ?? 0,
      screenshots: usage?.screenshots ?? 0,
      domains: usage?.domains ?? [],
      deleted,
    });
    if (!row) return undefined;
    row.credits_used = await settleSession(tx, row, o.config);
    const durationMs = Math.max(0, row.ended_at!.getTime() - row.created_at.getTime());
    const dashboard = sessionDashboardUrl(o.config.publicUrl, id);
    if (status === 'completed') {
      await emitEvent(tx, row.project_id, 'session.completed', {
        session_id: id,
        duration_ms: durationMs,
        proxy_bytes: row.proxy_bytes,
        network_bytes_total: row.network_bytes_total,
        steps: row.steps,
        screenshots: row.screenshots,
        domains: row.domains,
        reason,
        session_dashboard_url: dashboard,
      });
    } else {
      await emitEvent(tx, row.project_id, 'session.failed', {
        session_id: id,
        duration_ms: durationMs,
        reason,
        session_dashboard_url: dashboard,
      });
    }
    return row;
  });
}
