// A session's end, recorded once: its row marked ended with the traffic and steps it used,
// its credits settled, and session.completed or session.failed written to the outbox, all
// in one transaction, so the event exists exactly when the end does. Sessions ending
// together (a node's left by a crash) are recorded with recordEnds: one transaction and one
// outbox statement for all of them, not one of each per session. Ends that come one by one
// but at the same moment (a server's shutdown, a timeout sweep, a batch's sessions expiring
// together, many clients ending theirs) are gathered by an EndRecorder into the same few
// transactions: a group commit.
import type { EndReason, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { settleSession } from '../credits/settle.js';
import { emitEvents, type AnyEventToEmit } from '../outbox/emit.js';
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

export interface EndToRecord {
  id: string;
  status: 'completed' | 'failed';
  reason: EndReason;
  usage?: SessionUsage;
  deleted?: boolean;
}

/** What recording an end needs: where, the prices, and whom to tell (its event written, its end recorded). */
export interface RecordEndDeps {
  db: Db;
  config: ServiceConfig;
  signals: Pick<Signals, 'endRecorded' | 'deliveriesWritten'>;
}

/** Ends at most this many sessions in one transaction (a short one: requests wait on PGlite's). */
const ENDS_PER_TRANSACTION = 100;

/**
 * Records ends one caller at a time (each once: undefined when it had already ended), but commits the ends asked for while a
 * commit is under way together in the next one (each caller still hears its own row), so
 * a hundred sessions ending at once cost a few transactions, not a hundred in a row. A lone
 * end waits for nothing: it commits at once. When a group fails for any reason but the
 * database being unavailable, each of its ends is tried on its own, so one end's fault
 * never fails another's.
 */
export class EndRecorder {
  private waiting: { end: EndToRecord; done: (row: store.SessionRow | undefined) => void; fail: (err: unknown) => void }[] = [];
  private committing = false;

  constructor(
    private readonly o: RecordEndDeps,
    private readonly isUnavailable: (err: unknown) => boolean,
  ) {}

  record(end: EndToRecord): Promise<store.SessionRow | undefined> {
    return new Promise((done, fail) => {
      this.waiting.push({ end, done, fail });
      if (!this.committing) void this.commit();
    });
  }

  private async commit(): Promise<void> {
    this.committing = true;
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0, ENDS_PER_TRANSACTION);
      try {
        const rows = await recordEndsTogether(
          this.o,
          group.map((w) => w.end),
        );
        group.forEach((w, i) => w.done(rows[i]));
      } catch (err) {
        if (group.length === 1 || this.isUnavailable(err)) {
          for (const w of group) w.fail(err);
        } else {
          await Promise.all(group.map((w) => recordEnds(this.o, [w.end]).then(([row]) => w.done(row), w.fail)));
        }
      }
    }
    this.committing = false;
  }
}

/**
 * Ends several sessions (each once), a transaction for each ENDS_PER_TRANSACTION of them with
 * one statement for all their events; answers each one's row in order (undefined when it
 * had already ended).
 */
export async function recordEnds(o: RecordEndDeps, ends: readonly EndToRecord[]): Promise<Array<store.SessionRow | undefined>> {
  const out: Array<store.SessionRow | undefined> = [];
  for (let i = 0; i < ends.length; i += ENDS_PER_TRANSACTION) {
    out.push(...(await recordEndsTogether(o, ends.slice(i, i + ENDS_PER_TRANSACTION))));
  }
  return out;
}

async function recordEndsTogether(o: RecordEndDeps, ends: readonly EndToRecord[]): Promise<Array<store.SessionRow | undefined>> {
  const rows = await o.db.transaction(async (tx) => {
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
    await emitEvents(tx, o.signals, events);
    return rows;
  });
  // Committed: those waiting here for these ends may go on (rows already ended are undefined).
  for (const row of rows) if (row) o.signals.endRecorded.emit(row.id, row);
  return rows;
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
