// The delivery worker: sends each pending delivery attempt to its webhook, signed per
// Standard Webhooks, and records the outcome; a failed attempt schedules the next one
// (retry.ts) in the same statement that records it, the last one ends `dead`.
//
// Durability: work lives only in webhook_deliveries. A worker leases rows it claims
// (locked_by / locked_until, claimed with FOR UPDATE SKIP LOCKED so several nodes can run
// workers on one PostgreSQL); a worker killed mid-delivery leaves leased rows that any
// worker claims again once the lease runs out (on PGlite, which only one process can open,
// at once when the next worker starts). A receipt whose outcome was not recorded is sent
// again: delivery is at least once, and `webhook-id` (the event id) lets receivers dedupe.
//
// Isolation from receivers: at most `concurrency` requests in flight, at most
// `perWebhookConcurrency` of them to one webhook (fewer, `slowWebhookConcurrency`, for a
// webhook whose last attempt timed out or took over 5 s), each with a 10 s deadline, so a
// slow or hanging receiver holds a few slots, never the worker.
//
// Throughput: rows are claimed ahead into a small buffer (a webhook holds at most three
// times its in-flight limit, so a claim brings several rows and a finished request starts
// the next one without a database round trip), and outcomes are written together in one
// statement every few milliseconds. Claims and records are single statements, so the worker
// never holds a transaction (PGlite has a single connection shared with requests). A buffered row that could no longer finish inside its
// lease is given back unsent.
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { DELIVERY_ID_SQL, toEnvelope } from '../outbox/emit.js';
import { createAgents, postJson, type PostResult } from './http-post.js';
import { onDeliveriesWritten } from '../outbox/nudge.js';
import { DEFAULT_RETRY_SCHEDULE_MS, nextRetryDelay } from './retry.js';
import { activeSecrets, signatureHeaders } from './signing.js';

export interface DeliveryLogger {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface DeliveryWorkerOptions {
  db: Db;
  /** ALLOW_PRIVATE_NETWORKS: deliver to private, loopback and link-local addresses. */
  allowPrivate: boolean;
  /** Requests in flight at most (WEBHOOK_DELIVERY_CONCURRENCY). Default 64. */
  concurrency?: number;
  /** Requests in flight to one webhook at most. Default 8. */
  perWebhookConcurrency?: number;
  /** The same for a webhook that was slow (timed out or answered after 5 s). Default 2. */
  slowWebhookConcurrency?: number;
  /** Deadline of one attempt. Default 10 000. */
  requestTimeoutMs?: number;
  /** Response body bytes read at most. Default 64 KiB. */
  maxResponseBytes?: number;
  /** Response body bytes stored with the attempt. Default 1 KiB. */
  keepResponseBytes?: number;
  /** How often to look for due work besides nudges. Default 1000. */
  pollIntervalMs?: number;
  /** How long a claimed row stays leased; must exceed requestTimeoutMs. Default 60 000. */
  leaseMs?: number;
  /** Delays before attempts 2, 3, ...; default DEFAULT_RETRY_SCHEDULE_MS (≈ 23.6 h in all). */
  retrySchedule?: readonly number[];
  /** Jitter source, for tests. */
  random?: () => number;
  /** Names this worker's leases. Default a random id. */
  nodeId?: string;
  /**
   * Clear every lease at start. Right only when no other worker can use the database,
   * which is the case for PGlite (one process owns DATA_DIR); default: db.kind === 'pglite'.
   */
  releaseLeasesOnStart?: boolean;
  userAgent?: string;
  logger?: DeliveryLogger;
}

interface Claimed {
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
  data: unknown;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | string | null;
}

interface Outcome {
  claim: Claimed;
  result: PostResult;
}

export interface DeliveryWorkerStats {
  inFlight: number;
  attempts: number;
  succeeded: number;
  failed: number;
  dead: number;
  /** Results sent but not yet recorded. */
  unrecorded: number;
}

const SLOW_MS = 5_000;
const SLOW_MEMORY_MS = 10 * 60_000;
/** Follow-up looks after a nudge: the emitting transaction may commit a little later. */
const NUDGE_FOLLOW_UPS_MS = [5, 25, 100, 400];
/** A webhook may hold (in flight + claimed and waiting) this many times its in-flight limit. */
const HOLD_FACTOR = 3;
/** Outcomes are written together: after this long, or at once when this many are waiting. */
const FLUSH_LINGER_MS = 5;
const FLUSH_BATCH = 128;
/** Claims are spaced by a few times their own cost (bounds), so they take at most ~20 % of the time. */
const CLAIM_SPACING = 4;
const MIN_CLAIM_INTERVAL_MS = 2;
const MAX_CLAIM_INTERVAL_MS = 20;

export class DeliveryWorker {
  readonly nodeId: string;
  private readonly db: Db;
  private readonly o: Required<Omit<DeliveryWorkerOptions, 'db' | 'logger' | 'random' | 'nodeId'>> & {
    random: () => number;
  };
  private readonly logger: DeliveryLogger;
  private readonly agents = createAgents();
  /** Claimed rows not sent yet, oldest first. */
  private buffer: Array<Claimed & { claimedAt: number }> = [];
  private readonly inFlightBy = new Map<string, number>();
  private readonly bufferedBy = new Map<string, number>();
  /** Webhooks whose last attempt was slow, with when: forgotten after SLOW_MEMORY_MS. */
  private readonly slow = new Map<string, number>();
  private readonly controllers = new Set<AbortController>();
  private readonly outcomes: Outcome[] = [];
  private readonly settledWaiters: Array<() => void> = [];
  private inFlight = 0;
  private claimSeq = 0;
  private lastClaimAt = -Infinity;
  private lastClaimMs = 0;
  private lastAnalyzeAt = -Infinity;
  private analyzing = false;
  private started = false;
  private stopping = false;
  private pumping = false;
  private pumpAgain = false;
  private pumpScheduled = false;
  private maybeMore = true;
  private flushing: Promise<void> | null = null;
  private flushTimer: NodeJS.Timeout | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryTimerAt = Infinity;
  private readonly followUps = new Set<NodeJS.Timeout>();
  private unsubscribe: (() => void) | undefined;
  private readonly counters = { attempts: 0, succeeded: 0, failed: 0, dead: 0 };

  constructor(options: DeliveryWorkerOptions) {
    this.db = options.db;
    this.nodeId = options.nodeId ?? `w${randomBytes(6).toString('hex')}`;
    this.logger = options.logger ?? { warn: () => {}, error: () => {} };
    this.o = {
      allowPrivate: options.allowPrivate,
      concurrency: options.concurrency ?? 64,
      perWebhookConcurrency: options.perWebhookConcurrency ?? 8,
      slowWebhookConcurrency: options.slowWebhookConcurrency ?? 2,
      requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
      maxResponseBytes: options.maxResponseBytes ?? 64 * 1024,
      keepResponseBytes: options.keepResponseBytes ?? 1024,
      pollIntervalMs: options.pollIntervalMs ?? 1000,
      leaseMs: options.leaseMs ?? 60_000,
      retrySchedule: options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE_MS,
      releaseLeasesOnStart: options.releaseLeasesOnStart ?? options.db.kind === 'pglite',
      userAgent: options.userAgent ?? 'cloud-browser-webhooks/1.0',
      random: options.random ?? Math.random,
    };
    if (this.o.leaseMs < 2 * this.o.requestTimeoutMs + 1000) {
      throw new RangeError('leaseMs must be at least twice requestTimeoutMs plus a second');
    }
  }

  /** Starts polling and listening for nudges. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.stopping = false;
    if (this.o.releaseLeasesOnStart) {
      await this.db.query(
        `UPDATE webhook_deliveries SET locked_by = NULL, locked_until = NULL
          WHERE status = 'pending' AND locked_until IS NOT NULL`,
      );
    }
    this.unsubscribe = onDeliveriesWritten(() => this.nudge());
    this.pollTimer = setInterval(() => void this.poll(), this.o.pollIntervalMs);
    this.pollTimer.unref?.();
    this.maybeMore = true;
    this.schedulePump();
  }

  /**
   * The periodic look, for what no nudge announces (retries coming due, other nodes' writes,
   * expired leases): a cheap "is anything due?" first, the claim only when something is. An
   * idle server otherwise plans and runs the claim every second.
   */
  private async poll(): Promise<void> {
    if (this.pumping || this.pumpScheduled || this.stopping) return;
    try {
      const due = await this.db.query(
        `SELECT 1 FROM webhook_deliveries
          WHERE status = 'pending' AND scheduled_at <= now() AND (locked_until IS NULL OR locked_until < now())
          LIMIT 1`,
      );
      if (due.length === 0) return;
    } catch {
      // The claim reports what is wrong with the database.
    }
    this.maybeMore = true;
    this.schedulePump();
  }

  /** Something was written: look now, and a few times shortly after (for the commit). */
  nudge(): void {
    if (!this.started || this.stopping) return;
    this.maybeMore = true;
    this.schedulePump();
    if (this.followUps.size > 0) return;
    for (const ms of NUDGE_FOLLOW_UPS_MS) {
      const t = setTimeout(() => {
        this.followUps.delete(t);
        this.maybeMore = true;
        this.schedulePump();
      }, ms);
      t.unref?.();
      this.followUps.add(t);
    }
  }

  /**
   * Stops claiming, waits up to graceMs for requests in flight, aborts the rest, releases
   * every row claimed but not finished (for the next worker; not counted as attempts) and
   * records every outcome.
   */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.started) return;
    this.stopping = true;
    this.unsubscribe?.();
    clearInterval(this.pollTimer);
    clearTimeout(this.retryTimer);
    for (const t of this.followUps) clearTimeout(t);
    this.followUps.clear();
    while (this.pumping) await new Promise((r) => setTimeout(r, 5));
    this.releaseBuffered(this.buffer.splice(0));
    if (this.inFlight > 0) {
      await Promise.race([this.allSettled(), new Promise((r) => setTimeout(r, graceMs))]);
      for (const c of this.controllers) c.abort();
      await this.allSettled();
    }
    clearTimeout(this.flushTimer);
    // Record every outcome, including those a flush already in progress is writing.
    for (let i = 0; i < 5 && (this.outcomes.length > 0 || this.flushing); i++) {
      await (this.flushing ?? this.flush()).catch((err) =>
        this.logger.error({ err }, 'recording webhook outcomes failed at shutdown'),
      );
    }
    this.agents.http.destroy();
    this.agents.https.destroy();
    this.started = false;
  }

  stats(): DeliveryWorkerStats {
    return { inFlight: this.inFlight, ...this.counters, unrecorded: this.outcomes.length };
  }

  private allSettled(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((r) => this.settledWaiters.push(r));
  }

  private limitFor(webhookId: string): number {
    return this.slow.has(webhookId) ? this.o.slowWebhookConcurrency : this.o.perWebhookConcurrency;
  }

  private held(webhookId: string): number {
    return (this.inFlightBy.get(webhookId) ?? 0) + (this.bufferedBy.get(webhookId) ?? 0);
  }

  private static bump(map: Map<string, number>, key: string, by: number): void {
    const n = (map.get(key) ?? 0) + by;
    if (n <= 0) map.delete(key);
    else map.set(key, n);
  }

  /**
   * Claims are spaced (by a few times what the last one cost, 2 to 20 ms), so a stream of
   * nudges makes fewer, larger claims instead of one per event.
   */
  private schedulePump(): void {
    if (this.pumpScheduled || this.stopping) return;
    this.pumpScheduled = true;
    const spacing = Math.min(MAX_CLAIM_INTERVAL_MS, Math.max(MIN_CLAIM_INTERVAL_MS, CLAIM_SPACING * this.lastClaimMs));
    const wait = this.lastClaimAt + spacing - performance.now();
    const go = () => {
      this.pumpScheduled = false;
      void this.pump();
    };
    if (wait > 0) setTimeout(go, wait);
    else setImmediate(go);
  }

  /** Claims due rows into the buffer while there is room, and sends what it can. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        // Asked again while claiming: that request's work may not have been visible yet.
        if (this.pumpAgain) this.maybeMore = true;
        this.pumpAgain = false;
        while (!this.stopping && this.maybeMore) {
          const room = this.o.concurrency - this.buffer.length;
          if (room <= 0) break;
          const { claimed, more } = await this.claim(room);
          this.maybeMore = more;
          const at = Date.now();
          for (const c of claimed) {
            this.buffer.push({ ...c, claimedAt: at });
            DeliveryWorker.bump(this.bufferedBy, c.webhook_id, 1);
          }
          this.dispatch();
          if (claimed.length === 0) break;
        }
      } while (this.pumpAgain && !this.stopping);
    } catch (err) {
      // The database is unavailable or busy: the next poll tries again.
      this.logger.warn({ err }, 'claiming webhook deliveries failed');
    } finally {
      this.pumping = false;
    }
  }

  /** Sends buffered rows while slots are free, oldest first, within each webhook's limit. */
  private dispatch(): void {
    if (this.buffer.length === 0 || this.inFlight >= this.o.concurrency) return;
    const keep: typeof this.buffer = [];
    const expired: typeof this.buffer = [];
    // A row must be sent early enough to finish well inside its lease.
    const latestClaim = Date.now() - (this.o.leaseMs - this.o.requestTimeoutMs - 1000);
    for (const c of this.buffer) {
      if (this.stopping) {
        keep.push(c);
      } else if (c.claimedAt < latestClaim) {
        expired.push(c);
      } else if (this.inFlight < this.o.concurrency && (this.inFlightBy.get(c.webhook_id) ?? 0) < this.limitFor(c.webhook_id)) {
        DeliveryWorker.bump(this.bufferedBy, c.webhook_id, -1);
        this.launch(c);
      } else {
        keep.push(c);
      }
    }
    this.buffer = keep;
    if (expired.length > 0) this.releaseBuffered(expired);
  }

  /** Gives claimed, unsent rows back (their lease is cleared at the next flush). */
  private releaseBuffered(rows: Claimed[]): void {
    for (const c of rows) {
      DeliveryWorker.bump(this.bufferedBy, c.webhook_id, -1);
      this.outcomes.push({
        claim: c,
        result: { ok: false, status: null, error: null, body: null, retryAfterMs: null, durationMs: 0, aborted: true },
      });
    }
    if (rows.length > 0) this.scheduleFlush();
  }

  /**
   * One statement, so no transaction is held: due rows in schedule order, at most `room`,
   * each webhook within its cap, locked with FOR UPDATE SKIP LOCKED (so several nodes
   * never take the same row) and leased.
   */
  private async claim(room: number): Promise<{ claimed: Claimed[]; more: boolean }> {
    this.lastClaimAt = performance.now();
    const capFor = (id: string) => HOLD_FACTOR * this.limitFor(id) - this.held(id);
    const forgetBefore = Date.now() - SLOW_MEMORY_MS;
    for (const [id, at] of this.slow) if (at < forgetBefore) this.slow.delete(id);
    const known = new Set([...this.inFlightBy.keys(), ...this.bufferedBy.keys(), ...this.slow.keys()]);
    const caps = [...known].map((id) => [id, capFor(id)] as const);
    const saturated = caps.filter(([, cap]) => cap <= 0).map(([id]) => id);
    const open = caps.filter(([, cap]) => cap > 0);
    const token = `${this.nodeId}:${++this.claimSeq}`;
    const rows = await this.db.query<Omit<Claimed, 'token'>>(
      `WITH cand AS (
         SELECT s.id, s.webhook_id, row_number() OVER (PARTITION BY s.webhook_id ORDER BY s.scheduled_at, s.seq) AS rn
           FROM (SELECT d.id, d.webhook_id, d.scheduled_at, d.seq
                   FROM webhook_deliveries d
                   JOIN webhooks w ON w.id = d.webhook_id
                  WHERE d.status = 'pending'
                    AND d.scheduled_at <= now()
                    AND (d.locked_until IS NULL OR d.locked_until < now())
                    AND (w.enabled OR EXISTS (SELECT 1 FROM events e WHERE e.id = d.event_id AND e.test))
                    AND NOT (d.webhook_id = ANY ($1::text[]))
                  ORDER BY d.scheduled_at
                  LIMIT $2) s
       ),
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
      RETURNING d.id, d.webhook_id, d.event_id, d.attempt, d.scheduled_at, d.seq, e.type, e.created, e.project_id, e.text,
                e.data, w.url, w.secret, w.previous_secret, w.previous_secret_expires_at`,
      [
        saturated,
        room,
        open.map(([id]) => id),
        open.map(([, cap]) => cap),
        HOLD_FACTOR * this.o.perWebhookConcurrency,
        token,
        this.o.leaseMs / 1000,
      ],
    );
    // Schedule order (UPDATE ... RETURNING keeps none).
    this.lastClaimMs = performance.now() - this.lastClaimAt;
    this.maybeAnalyze(this.lastClaimMs);
    rows.sort(
      (a, b) =>
        new Date(a.scheduled_at).getTime() - new Date(b.scheduled_at).getTime() || Number(a.seq) - Number(b.seq),
    );
    const per = new Map<string, number>();
    for (const r of rows) per.set(r.webhook_id, (per.get(r.webhook_id) ?? 0) + 1);
    const hitCap = [...per].some(([id, n]) => n >= capFor(id));
    const more = rows.length === room || saturated.length > 0 || hitCap;
    return { claimed: rows.map((r) => ({ ...r, token })), more };
  }

  /**
   * Planner statistics that still describe an empty table make every claim scan the whole
   * backlog once it grows. PGlite has no autovacuum at all, and PostgreSQL's comes only
   * every minute or so; so when claims get slow, refresh them (at most every 10 s), and on
   * PGlite also now and then while busy.
   */
  private maybeAnalyze(claimMs: number): void {
    if (this.analyzing) return;
    const since = performance.now() - this.lastAnalyzeAt;
    const periodic = this.db.kind === 'pglite' && since > 300_000;
    if (!((claimMs > 10 && since > 10_000) || periodic)) return;
    this.analyzing = true;
    this.lastAnalyzeAt = performance.now();
    this.db
      .query('ANALYZE webhook_deliveries, events, webhooks')
      .catch((err) => this.logger.warn({ err }, 'ANALYZE failed'))
      .finally(() => {
        this.analyzing = false;
      });
  }

  private launch(c: Claimed): void {
    this.inFlight++;
    DeliveryWorker.bump(this.inFlightBy, c.webhook_id, 1);
    const controller = new AbortController();
    this.controllers.add(controller);
    const envelope = toEnvelope({ id: c.event_id, type: c.type, created: c.created, project_id: c.project_id, text: c.text, data: c.data });
    const body = JSON.stringify(envelope);
    const headers = {
      ...signatureHeaders(activeSecrets(c), c.event_id, body),
      'user-agent': this.o.userAgent,
    };
    postJson(c.url, body, headers, {
      timeoutMs: this.o.requestTimeoutMs,
      maxResponseBytes: this.o.maxResponseBytes,
      keepResponseBytes: this.o.keepResponseBytes,
      allowPrivate: this.o.allowPrivate,
      agents: this.agents,
      signal: controller.signal,
    })
      .catch(
        (err): PostResult => ({
          ok: false,
          status: null,
          error: String((err as Error)?.message ?? err),
          body: null,
          retryAfterMs: null,
          durationMs: 0,
          aborted: false,
        }),
      )
      .then((result) => {
        this.controllers.delete(controller);
        if (!result.aborted) {
          if (result.durationMs >= SLOW_MS || (result.status === null && /^Timed out/.test(result.error ?? ''))) {
            this.slow.set(c.webhook_id, Date.now());
          } else {
            this.slow.delete(c.webhook_id);
          }
        }
        this.outcomes.push({ claim: c, result });
        this.inFlight--;
        DeliveryWorker.bump(this.inFlightBy, c.webhook_id, -1);
        if (this.inFlight === 0) for (const w of this.settledWaiters.splice(0)) w();
        this.scheduleFlush();
        if (this.stopping) return;
        this.dispatch();
        // Refill before this webhook's buffered rows run out.
        if (this.maybeMore && (this.bufferedBy.get(c.webhook_id) ?? 0) <= this.limitFor(c.webhook_id)) this.schedulePump();
      });
  }

  private scheduleFlush(): void {
    if (this.outcomes.length >= FLUSH_BATCH) {
      clearTimeout(this.flushTimer);
      this.flushTimer = undefined;
      void this.flush().catch((err) => this.logger.warn({ err }, 'recording webhook outcomes failed; retrying'));
      return;
    }
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.flush().catch((err) => this.logger.warn({ err }, 'recording webhook outcomes failed; retrying'));
    }, FLUSH_LINGER_MS);
  }

  /** Records every queued outcome together; concurrent callers share the run. */
  private flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.outcomes.length === 0) return Promise.resolve();
    this.flushing = (async () => {
      try {
        while (this.outcomes.length > 0) {
          const batch = this.outcomes.splice(0);
          try {
            await this.record(batch);
          } catch (err) {
            this.outcomes.unshift(...batch);
            if (!this.stopping) {
              const t = setTimeout(() => void this.flush().catch(() => {}), 500);
              t.unref?.();
            }
            throw err;
          }
        }
      } finally {
        this.flushing = null;
      }
    })();
    return this.flushing;
  }

  /**
   * Writes outcomes with single statements (no transaction is held, so the worker never
   * contends with request transactions): each finished row gets its result, a failed one
   * its next attempt in the same statement, and rows given back lose their lease. A row
   * whose lease another worker took over meanwhile is left alone.
   */
  private async record(batch: Outcome[]): Promise<void> {
    const done = batch.filter((o) => !o.result.aborted);
    const released = batch.filter((o) => o.result.aborted);
    const ids: string[] = [];
    const tokens: string[] = [];
    const statuses: string[] = [];
    const responseStatuses: Array<number | null> = [];
    const errors: Array<string | null> = [];
    const bodies: Array<string | null> = [];
    const durations: number[] = [];
    const delays: Array<number | null> = [];
    let earliestRetry = Infinity;
    for (const { claim, result } of done) {
      let status: 'succeeded' | 'failed' | 'dead';
      let delay: number | null = null;
      if (result.ok) status = 'succeeded';
      else {
        delay = nextRetryDelay(claim.attempt, {
          schedule: this.o.retrySchedule,
          random: this.o.random,
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
      const rows = await this.db.query<{ id: string }>(
        `WITH r AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::int[], $8::double precision[])
             AS r(id, token, status, response_status, error_message, response_body, duration_ms, delay)
         ),
         done AS (
           UPDATE webhook_deliveries d
              SET status = r.status, response_status = r.response_status, error_message = r.error_message,
                  response_body = r.response_body, duration_ms = r.duration_ms, completed_at = now(),
                  locked_by = NULL, locked_until = NULL
             FROM r
            WHERE d.id = r.id AND d.locked_by = r.token AND d.status = 'pending'
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
        [ids, tokens, statuses, responseStatuses, errors, bodies, durations, delays],
      );
      recorded = new Set(rows.map((r) => r.id));
    }
    if (released.length > 0) {
      await this.db.query(
        `UPDATE webhook_deliveries d SET locked_by = NULL, locked_until = NULL, started_at = NULL
           FROM unnest($1::text[], $2::text[]) AS r(id, token)
          WHERE d.id = r.id AND d.locked_by = r.token AND d.status = 'pending'`,
        [released.map((o) => o.claim.id), released.map((o) => o.claim.token)],
      );
    }
    for (let i = 0; i < ids.length; i++) {
      if (!recorded.has(ids[i])) continue;
      this.counters.attempts++;
      if (statuses[i] === 'succeeded') this.counters.succeeded++;
      else if (statuses[i] === 'failed') this.counters.failed++;
      else this.counters.dead++;
    }
    if (earliestRetry < Infinity) this.wakeAt(Date.now() + earliestRetry);
  }

  /** Looks for due work at `at` (a retry sooner than the next poll). */
  private wakeAt(at: number): void {
    if (this.stopping || at >= this.retryTimerAt) return;
    clearTimeout(this.retryTimer);
    this.retryTimerAt = at;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimerAt = Infinity;
        this.maybeMore = true;
        this.schedulePump();
      },
      Math.max(0, at - Date.now()) + 5,
    );
    this.retryTimer.unref?.();
  }
}

export async function startDeliveryWorker(options: DeliveryWorkerOptions): Promise<DeliveryWorker> {
  const worker = new DeliveryWorker(options);
  await worker.start();
  return worker;
}
