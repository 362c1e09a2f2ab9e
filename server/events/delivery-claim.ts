// Claiming due deliveries from the database: what the worker leases, how it looks for due
// work, and keeping the planner's statistics fresh enough for the claim to stay cheap.
import type { Db } from '../store/db.js';
import type { DeliveryLogger } from './delivery-options.js';

export interface Claimed {
  id: string;
  token: string;
  scheduled_at: Date | string;
  seq: number;
  webhook_id: string;
  event_id: string;
  attempt: number;
  type: string;
  created: Date | string;
  project_id: string;
  text: string;
  /** The event's data as stored (jsonb as text): put in the body as it is, not parsed and written again. */
  data_json: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | string | null;
}

/** Clears every pending row's lease (at start, when no other worker can use the database). */
export async function releaseAllLeases(db: Db): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET locked_by = NULL, locked_until = NULL
      WHERE status = 'pending' AND locked_until IS NOT NULL`,
  );
}

/** Whether any row is due and not leased: the cheap look before a claim. */
export async function anyDue(db: Db, local?: LocalLeases): Promise<boolean> {
  const due = await db.query(
    `SELECT 1 FROM webhook_deliveries
      WHERE status = 'pending' AND scheduled_at <= now() AND (locked_until IS NULL OR locked_until < now())
        AND NOT (id = ANY ($1::text[]))
      LIMIT 1`,
    [local?.held() ?? []],
  );
  return due.length > 0;
}

/**
 * The leases of a PGlite database, which only one process can open: no worker elsewhere can
 * take its rows, so a claimed row's lease is kept here, in memory, shared by every worker of
 * this process on that database, instead of in the row. A claim is then a read rather than
 * an update of each row it takes, and an outcome's write checks the lease here. Claims run
 * one at a time (a row read by one claim is leased before the next reads). A lease runs out
 * as a row's would (leaseMs); a process that ends takes its leases with it, as a restart
 * releases a row's (releaseLeasesOnStart).
 */
export class LocalLeases {
  private readonly leases = new Map<string, { token: string; until: number; at: Date }>();
  private claiming: Promise<unknown> = Promise.resolve();

  /** Ids leased now (not run out). */
  held(): string[] {
    const now = Date.now();
    return [...this.leases].filter(([, l]) => l.until > now).map(([id]) => id);
  }

  /** When the lease of `token` on `id` was taken, unless another claim took the row since:
   *  as with a row's locked_by, a lease that ran out still records its outcome if nobody
   *  took the row meanwhile. */
  heldBy(id: string, token: string): Date | undefined {
    const l = this.leases.get(id);
    return l?.token === token ? l.at : undefined;
  }

  release(id: string, token: string): void {
    if (this.leases.get(id)?.token === token) this.leases.delete(id);
  }

  /** Runs one claim after the previous one, leasing what it read. */
  claim<T extends { id: string }>(token: string, leaseMs: number, read: (held: string[]) => Promise<T[]>): Promise<T[]> {
    const run = this.claiming.then(async () => {
      const rows = await read(this.held());
      const at = new Date();
      for (const r of rows) this.leases.set(r.id, { token, until: at.getTime() + leaseMs, at });
      return rows;
    });
    this.claiming = run.catch(() => {});
    return run;
  }
}

const localLeasesOf = new WeakMap<Db, LocalLeases>();

/** The in-memory leases of a PGlite database (one set per database); none for PostgreSQL. */
export function localLeases(db: Db): LocalLeases | undefined {
  if (db.kind !== 'pglite') return undefined;
  let leases = localLeasesOf.get(db);
  if (!leases) localLeasesOf.set(db, (leases = new LocalLeases()));
  return leases;
}

export interface ClaimParams {
  /** Webhooks that may take no more rows. */
  saturated: string[];
  /** Rows claimed at most. */
  room: number;
  /** Rows each of these webhooks may take at most... */
  open: ReadonlyArray<readonly [string, number]>;
  /** ...and any other webhook. */
  defaultCap: number;
  /** Written to locked_by: names this claim's leases. */
  token: string;
  leaseMs: number;
}

/** Due rows in schedule order, at most `room` ($2), and none of the webhooks saturated ($1) or of the ids $extra leaves out. */
const candidates = (extra: string) => `
  cand AS (
    SELECT s.id, s.webhook_id, row_number() OVER (PARTITION BY s.webhook_id ORDER BY s.scheduled_at, s.seq) AS rn
      FROM (SELECT d.id, d.webhook_id, d.scheduled_at, d.seq
              FROM webhook_deliveries d
              JOIN webhooks w ON w.id = d.webhook_id
             WHERE d.status = 'pending'
               AND d.scheduled_at <= now()
               AND (d.locked_until IS NULL OR d.locked_until < now())
               AND (w.enabled OR EXISTS (SELECT 1 FROM events e WHERE e.id = d.event_id AND e.test))
               AND NOT (d.webhook_id = ANY ($1::text[]))${extra}
             ORDER BY d.scheduled_at
             LIMIT $2) s
  )`;

/** What a claimed row carries: its delivery, its event and its webhook. */
const CLAIMED_COLUMNS = `d.id, d.webhook_id, d.event_id, d.attempt, d.scheduled_at, d.seq, e.type, e.created, e.project_id, e.text,
  e.data::text AS data_json, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at`;

/**
 * One statement, so no transaction is held: due rows in schedule order, at most `room`,
 * each webhook within its cap, locked with FOR UPDATE SKIP LOCKED (so several nodes
 * never take the same row) and leased. On PGlite (`local`) the same rows are read and
 * leased in memory (LocalLeases).
 */
export function claimDue(db: Db, p: ClaimParams, local?: LocalLeases): Promise<Array<Omit<Claimed, 'token'>>> {
  const caps = [p.saturated, p.room, p.open.map(([id]) => id), p.open.map(([, cap]) => cap), p.defaultCap];
  if (local) {
    return local.claim(p.token, p.leaseMs, (held) =>
      db.query<Omit<Claimed, 'token'>>(
        `WITH ${candidates(' AND NOT (d.id = ANY ($6::text[]))')}
         SELECT ${CLAIMED_COLUMNS}
           FROM cand c
           JOIN webhook_deliveries d ON d.id = c.id
           JOIN events e ON e.id = d.event_id
           JOIN webhooks w ON w.id = d.webhook_id
           LEFT JOIN unnest($3::text[], $4::int[]) AS cap(webhook_id, n) ON cap.webhook_id = c.webhook_id
          WHERE c.rn <= coalesce(cap.n, $5)`,
        [...caps, held],
      ),
    );
  }
  return db.query<Omit<Claimed, 'token'>>(
    `WITH ${candidates('')},
     pick AS (
       SELECT d.id
         FROM webhook_deliveries d
         JOIN cand c ON c.id = d.id
         LEFT JOIN unnest($3::text[], $4::int[]) AS cap(webhook_id, n) ON cap.webhook_id = c.webhook_id
        WHERE c.rn <= coalesce(cap.n, $5)
          AND d.status = 'pending'
          AND (d.locked_until IS NULL OR d.locked_until < now())
        FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE webhook_deliveries d
        SET locked_by = $6,
            locked_until = now() + make_interval(secs => $7::double precision),
            started_at = now()
       FROM pick, events e, webhooks w
      WHERE d.id = pick.id AND e.id = d.event_id AND w.id = d.webhook_id
    RETURNING ${CLAIMED_COLUMNS}`,
    [...caps, p.token, p.leaseMs / 1000],
  );
}

/** Schedule order, for sorting claimed rows. */
export function bySchedule(a: Omit<Claimed, 'token'>, b: Omit<Claimed, 'token'>): number {
  return new Date(a.scheduled_at).getTime() - new Date(b.scheduled_at).getTime() || Number(a.seq) - Number(b.seq);
}

/** A claim's time a row this many times the best one seen says its plan went bad... */
const BAD_PLAN_FACTOR = 4;
/** ...and so does a row costing more than this (ms), whatever was seen. */
const BAD_PLAN_ROW_MS = 0.25;
/** Claims of fewer rows set no baseline (their fixed cost is most of their time). */
const BASELINE_MIN_ROWS = 16;

/**
 * Whether a claim that took claimMs for `rows` rows looks like a bad plan: slow for the rows
 * it took, not merely large. A claim of 250 rows on a healthy plan takes 10 ms (0.04 ms a
 * row on 2 cores); one that scans the whole backlog costs more a row the longer the backlog.
 * bestRowMs: the lowest time a row of an earlier claim (Infinity when none).
 */
export function looksLikeBadPlan(claimMs: number, rows: number, bestRowMs: number): boolean {
  return claimMs > 10 && claimMs / Math.max(1, rows) > Math.min(BAD_PLAN_ROW_MS, BAD_PLAN_FACTOR * bestRowMs);
}

/**
 * Planner statistics that still describe an empty table make every claim scan the whole
 * backlog once it grows. PGlite has no autovacuum at all, and PostgreSQL's comes only
 * every minute or so; so when a claim looks like a bad plan, refresh them (at most every
 * 10 s), and on PGlite also now and then while busy. Not for a claim that is merely large:
 * a backlog's drain claims 250 rows in 10 ms, and an ANALYZE then (or at a worker's first
 * claim, as the periodic refresh did) took 75 ms of PGlite's thread: 4 % of a drain of
 * 10,000 deliveries, with claims no faster after it.
 */
export class PlannerStats {
  private readonly db: Db;
  private readonly logger: DeliveryLogger;
  private lastAnalyzeAt = -Infinity;
  /** The periodic refresh counts from the worker's start too: a first claim on a good plan needs none. */
  private readonly startedAt = performance.now();
  private analyzing = false;
  private bestRowMs = Infinity;

  constructor(db: Db, logger: DeliveryLogger) {
    this.db = db;
    this.logger = logger;
  }

  /** After a claim that took claimMs for `rows` rows. */
  maybeAnalyze(claimMs: number, rows: number): void {
    const badPlan = looksLikeBadPlan(claimMs, rows, this.bestRowMs);
    if (rows >= BASELINE_MIN_ROWS) this.bestRowMs = Math.min(this.bestRowMs, claimMs / rows);
    if (this.analyzing) return;
    const now = performance.now();
    const periodic = this.db.kind === 'pglite' && now - Math.max(this.lastAnalyzeAt, this.startedAt) > 300_000;
    if (!((badPlan && now - this.lastAnalyzeAt > 10_000) || periodic)) return;
    this.analyzing = true;
    this.lastAnalyzeAt = now;
    this.db
      .query('ANALYZE webhook_deliveries, events, webhooks')
      .catch((err) => this.logger.warn({ err }, 'ANALYZE failed'))
      .finally(() => {
        this.analyzing = false;
      });
  }
}
