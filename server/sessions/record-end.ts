// A session's end, recorded once: its row marked ended with the traffic and steps it used,
// its credits settled, and session.completed or session.failed written to the outbox, all
// in one transaction, so the event exists exactly when the end does. Sessions ending
// together (a node's left by a crash) are recorded with recordEnds: one transaction and one
// outbox statement for all of them, not one of each per session.
import type { EndReason } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { settleSession } from '../credits/settle.js';
import { emitEvents, type AnyEventToEmit } from '../outbox/emit.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';
import { endsRecorded } from './end-recorded.js';
import { sessionDashboardUrl } from '../outbox/links.js';

export interface SessionUsage {
  networkBytes: number;
  proxyBytes: number;
  domains: string[];
  steps: number;
  screenshots: number;
}

export interface EndToRecord {
  id: string;
  status: 'completed' | 'failed';
  reason: EndReason;
  usage?: SessionUsage;
  deleted?: boolean;
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
  const [row] = await recordEnds(o, [{ id, status, reason, usage, deleted }]);
  return row;
}

/** Ends at most this many sessions in one transaction (a short one: requests wait on PGlite's). */
const ENDS_PER_TRANSACTION = 100;

/**
 * recordEnd for several sessions, a transaction for each ENDS_PER_TRANSACTION of them with
 * one statement for all their events; answers each one's row in order (undefined when it
 * had already ended).
 */
export async function recordEnds(o: { db: Db; config: ServiceConfig }, ends: readonly EndToRecord[]): Promise<Array<store.SessionRow | undefined>> {
  const out: Array<store.SessionRow | undefined> = [];
  for (let i = 0; i < ends.length; i += ENDS_PER_TRANSACTION) {
    const rows = await recordEndsTogether(o, ends.slice(i, i + ENDS_PER_TRANSACTION));
    // Committed: those waiting here for these ends may go on.
    endsRecorded(rows);
    out.push(...rows);
  }
  return out;
}

async function recordEndsTogether(o: { db: Db; config: ServiceConfig }, ends: readonly EndToRecord[]): Promise<Array<store.SessionRow | undefined>> {
  return o.db.transaction(async (tx) => {
    const rows: Array<store.SessionRow | undefined> = [];
    const events: AnyEventToEmit[] = [];
    for (const { id, status, reason, usage, deleted } of ends) {
      const row = await store.endSessionRow(tx, id, {
        status,
        reason,
        proxyBytes: usage?.proxyBytes ?? 0,
        networkBytes: usage?.networkBytes ?? 0,
        steps: usage?.steps ?? 0,
        screenshots: usage?.screenshots ?? 0,
        domains: usage?.domains ?? [],
        deleted: deleted ?? false,
      });
      rows.push(row);
      if (!row) continue;
      row.credits_used = await settleSession(tx, row, o.config);
      events.push(endEvent(o.config, row, status, reason));
    }
    await emitEvents(tx, events);
    return rows;
  });
}

/** session.completed or session.failed for an ended row. */
function endEvent(config: ServiceConfig, row: store.SessionRow, status: 'completed' | 'failed', reason: EndReason): AnyEventToEmit {
  const durationMs = Math.max(0, row.ended_at!.getTime() - row.created_at.getTime());
  const dashboard = sessionDashboardUrl(config.publicUrl, row.id);
  if (status === 'completed') {
    return {
      projectId: row.project_id,
      type: 'session.completed',
      data: {
        session_id: row.id,
        duration_ms: durationMs,
        proxy_bytes: row.proxy_bytes,
        network_bytes_total: row.network_bytes_total,
        steps: row.steps,
        screenshots: row.screenshots,
        domains: row.domains,
        reason,
        session_dashboard_url: dashboard,
      },
    };
  }
  return {
    projectId: row.project_id,
    type: 'session.failed',
    data: { session_id: row.id, duration_ms: durationMs, reason, session_dashboard_url: dashboard },
  };
}
