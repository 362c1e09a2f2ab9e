// Recording attempts' outcomes: a success ends the delivery, a failure schedules the next
// attempt (retry.ts) in the same statement that records it, the last failure ends `dead`;
// rows given back unsent only lose their lease.
import { DELIVERY_ID_SQL } from '../outbox/emit.js';
import type { Db } from '../store/db.js';
import type { Claimed, LocalLeases } from './delivery-claim.js';
import type { PostResult } from './http-post.js';
import { nextRetryDelay } from './retry.js';

export interface Outcome {
  claim: Claimed;
  result: PostResult;
}

export type AttemptStatus = 'succeeded' | 'failed' | 'dead';

export interface RetryOptions {
  schedule: readonly number[];
  random: () => number;
}

export interface Recorded {
  /** The status of each outcome recorded (a row another worker took over is not). */
  statuses: AttemptStatus[];
  /** The soonest retry scheduled, in ms from now; Infinity when none. */
  earliestRetryMs: number;
}

/** The outcome of a claimed row given back unsent: not an attempt (see recordOutcomes). */
export function givenBack(claim: Claimed): Outcome {
  return {
    claim,
    result: { ok: false, status: null, error: null, body: null, retryAfterMs: null, durationMs: 0, aborted: true },
  };
}

/**
 * Writes outcomes with single statements (no transaction is held, so the worker never
 * contends with request transactions): each finished row gets its result, a failed one
 * its next attempt in the same statement, and rows given back lose their lease. A row
 * whose lease another worker took over meanwhile is left alone. With `local` (PGlite) the
 * leases are that memory's: checked there, and released once the outcomes are written.
 */
export async function recordOutcomes(db: Db, batch: Outcome[], retry: RetryOptions, local?: LocalLeases): Promise<Recorded> {
  // In memory, a lease no longer held is known before writing (in a row, by the write).
  const startedAt = new Map<string, Date>();
  if (local) {
    for (const { claim } of batch) {
      const at = local.heldBy(claim.id, claim.token);
      if (at) startedAt.set(claim.id, at);
    }
    batch = batch.filter((o) => startedAt.has(o.claim.id));
  }
  const done = batch.filter((o) => !o.result.aborted);
  const released = batch.filter((o) => o.result.aborted);
  const ids: string[] = [];
  const tokens: string[] = [];
  const statuses: AttemptStatus[] = [];
  const responseStatuses: Array<number | null> = [];
  const errors: Array<string | null> = [];
  const bodies: Array<string | null> = [];
  const durations: number[] = [];
  const delays: Array<number | null> = [];
  let earliestRetry = Infinity;
  for (const { claim, result } of done) {
    let status: AttemptStatus;
    let delay: number | null = null;
    if (result.ok) status = 'succeeded';
    else {
      delay = nextRetryDelay(claim.attempt, {
        schedule: retry.schedule,
        random: retry.random,
        retryAfterMs: result.retryAfterMs,
      });
      if (delay === null) status = 'dead';
      else {
        status = 'failed';
        earliestRetry = Math.min(earliestRetry, delay);
      }
    }
    ids.push(claim.id);
    tokens.push(claim.token);
    statuses.push(status);
    responseStatuses.push(result.status);
    errors.push(result.error === null ? null : result.error.slice(0, 1000));
    bodies.push(result.body);
    durations.push(result.durationMs);
    delays.push(delay === null ? null : delay / 1000);
  }
  let recorded = new Set<string>();
  if (ids.length > 0) {
    // A row's lease is its token in locked_by, or (local) the memory's, checked above: then
    // the statement only sees that the row is still pending, and records when it started.
    const leased = local ? `d.status = 'pending'` : `d.locked_by = r.token AND d.status = 'pending'`;
    const rows = await db.query<{ id: string }>(
      `WITH r AS (
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::int[], $8::double precision[], $9::timestamptz[])
           AS r(id, token, status, response_status, error_message, response_body, duration_ms, delay, started_at)
       ),
       done AS (
         UPDATE webhook_deliveries d
            SET status = r.status, response_status = r.response_status, error_message = r.error_message,
                response_body = r.response_body, duration_ms = r.duration_ms, completed_at = now(),
                locked_by = NULL, locked_until = NULL, started_at = coalesce(r.started_at, d.started_at)
           FROM r
          WHERE d.id = r.id AND ${leased}
         RETURNING d.id, d.project_id, d.webhook_id, d.event_id, d.event_type, d.attempt, r.delay
       ),
       next AS (
         INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event_type, attempt, scheduled_at)
         SELECT ${DELIVERY_ID_SQL}, done.project_id, done.webhook_id, done.event_id, done.event_type, done.attempt + 1,
                now() + make_interval(secs => done.delay)
           FROM done WHERE done.delay IS NOT NULL
         ON CONFLICT (event_id, webhook_id, attempt) DO NOTHING
       )
       SELECT id FROM done`,
      [ids, tokens, statuses, responseStatuses, errors, bodies, durations, delays, ids.map((id) => startedAt.get(id) ?? null)],
    );
    recorded = new Set(rows.map((r) => r.id));
  }
  if (local) {
    // Written (or given back unsent, which in memory needs no statement): the leases go.
    for (const { claim } of batch) local.release(claim.id, claim.token);
  } else if (released.length > 0) {
    await db.query(
      `UPDATE webhook_deliveries d SET locked_by = NULL, locked_until = NULL, started_at = NULL
         FROM unnest($1::text[], $2::text[]) AS r(id, token)
        WHERE d.id = r.id AND d.locked_by = r.token AND d.status = 'pending'`,
      [released.map((o) => o.claim.id), released.map((o) => o.claim.token)],
    );
  }
  return {
    statuses: statuses.filter((_, i) => recorded.has(ids[i])),
    earliestRetryMs: earliestRetry,
  };
}
