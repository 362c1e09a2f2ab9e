// The delivery worker: sends each pending delivery attempt to its webhook, signed per
// Standard Webhooks, and records the outcome; a failed attempt schedules the next one
// (retry.ts) in the same statement that records it, the last one ends `dead`.
//
// Durability: work lives only in webhook_deliveries. A worker leases rows it claims
// (locked_by / locked_until, claimed with FOR UPDATE SKIP LOCKED so several nodes can run
// workers on one PostgreSQL); a worker killed mid-delivery leaves leased rows that any
// worker claims again once the lease runs out. PGlite, which only one process can open,
// keeps its leases in that process's memory (LocalLeases): a claim there reads rows instead
// of updating each, and a killed process's leases are gone with it. A receipt whose outcome
// was not recorded is sent again: delivery is at least once, and `webhook-id` (the event
// id) lets receivers dedupe.
//
// Isolation from receivers: at most `concurrency` requests in flight, at most
// `perWebhookConcurrency` of them to one webhook (fewer, `slowWebhookConcurrency`, for a
// webhook whose last attempt timed out or took over 5 s), each with a 10 s deadline, so a
// slow or hanging receiver holds a few slots, never the worker.
//
// Throughput: rows are claimed ahead into a buffer, one queue per webhook, so a claim brings
// many rows and a finished request starts the next one without a database round trip. A
// webhook that answers quickly may hold FAST_HOLD_FACTOR times its in-flight limit (a claim
// every few hundred deliveries, not every few dozen: claims, not requests, bounded a
// backlog's drain at 0.2x a bare loop of POSTs); a slow one only HOLD_FACTOR times, and
// gives back what it held beyond that when it turns slow, so its rows are not kept from
// other workers. Outcomes are written together in one statement every 100 ms at most. Claims and records are single statements, so the worker
// never holds a transaction (PGlite has a single connection shared with requests). A buffered row that could no longer finish inside its
// lease is given back unsent.
//
// This file is the worker loop (buffer, concurrency limits, nudges, polling, flushing,
// shutdown); its parts: delivery-options.ts (options and defaults), delivery-claim.ts
// (claiming due rows), delivery-attempt.ts (one signed POST and its result),
// delivery-record.ts (recording outcomes, scheduling retries, marking dead),
// delivery-outcomes.ts (outcomes written together) and delivery-stats.ts (the counters
// behind stats()).
import { randomBytes } from 'node:crypto';
import type { Db } from '../store/db.js';
import { createAgents } from './http-post.js';
import { resolveOptions, type DeliveryLogger, type DeliveryWorkerOptions, type ResolvedOptions } from './delivery-options.js';
import { anyDue, bySchedule, claimDue, localLeases, PlannerStats, releaseAllLeases, type Claimed, type LocalLeases } from './delivery-claim.js';
import { attempt, wasSlow, type AttemptOptions } from './delivery-attempt.js';
import { OutcomeWriter } from './delivery-outcomes.js';
import { givenBack } from './delivery-record.js';
import { deliveryStats, newCounters, type DeliveryWorkerStats } from './delivery-stats.js';
import { secretOpener } from './sealed-secrets.js';

export type { DeliveryLogger, DeliveryWorkerOptions, DeliveryWorkerStats };

const SLOW_MEMORY_MS = 10 * 60_000;
/** Follow-up looks after a nudge: the emitting transaction may commit a little later. */
const NUDGE_FOLLOW_UPS_MS = [5, 25, 100, 400];
/** A slow webhook may hold (in flight + claimed and waiting) this many times its in-flight limit... */
const HOLD_FACTOR = 3;
/** ...a fast one this many (at 8 in flight, 512 rows: under a second of its work; claims of 256 cost a third less a row than of 64 on PGlite). */
const FAST_HOLD_FACTOR = 64;
/** Rows buffered at most, in all, as a multiple of `concurrency`. */
const BUFFER_FACTOR = 16;
/** Claims are spaced by a few times their own cost (bounds), so they take at most ~20 % of the time. */
const CLAIM_SPACING = 4;
const MIN_CLAIM_INTERVAL_MS = 2;
const MAX_CLAIM_INTERVAL_MS = 20;

type Buffered = Claimed & { claimedAt: number };

export class DeliveryWorker {
  readonly nodeId: string;
  private readonly db: Db;
  /** PGlite: the leases of its rows, kept in this process (LocalLeases); PostgreSQL: none, they are in the rows. */
  private readonly local: LocalLeases | undefined;
  private readonly o: ResolvedOptions;
  private readonly logger: DeliveryLogger;
  private readonly agents = createAgents();
  private readonly attemptOptions: AttemptOptions;
  private readonly planner: PlannerStats;
  /** Claimed rows not sent yet, a queue per webhook (oldest first); no empty queues. */
  private readonly queues = new Map<string, Buffered[]>();
  private buffered = 0;
  private readonly inFlightBy = new Map<string, number>();
  /** Webhooks whose last attempt was slow, with when: forgotten after SLOW_MEMORY_MS. */
  private readonly slow = new Map<string, number>();
  private readonly controllers = new Set<AbortController>();
  private readonly settledWaiters: Array<() => void> = [];
  private inFlight = 0;
  private claimSeq = 0;
  private lastClaimAt = -Infinity;
  private lastClaimMs = 0;
  private started = false;
  private stopping = false;
  private pumping = false;
  private pumpAgain = false;
  private pumpScheduled = false;
  private maybeMore = true;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryTimerAt = Infinity;
  private readonly followUps = new Set<NodeJS.Timeout>();
  private unsubscribe: (() => void) | undefined;
  private readonly counters = newCounters();
  private readonly signals: DeliveryWorkerOptions['signals'];
  private readonly outcomes: OutcomeWriter;

  constructor(options: DeliveryWorkerOptions) {
    this.db = options.db;
    this.signals = options.signals;
    this.local = localLeases(options.db);
    this.nodeId = options.nodeId ?? `w${randomBytes(6).toString('hex')}`;
    this.logger = options.logger ?? { warn: () => {}, error: () => {} };
    this.o = resolveOptions(options);
    this.attemptOptions = { ...this.o, agents: this.agents, openSecret: secretOpener(options.secrets) };
    this.planner = new PlannerStats(this.db, this.logger);
    this.outcomes = new OutcomeWriter({
      db: this.db,
      local: this.local,
      options: this.o,
      logger: this.logger,
      counters: this.counters,
      retryIn: (ms) => this.wakeAt(Date.now() + ms),
      stopping: () => this.stopping,
    });
  }

  /** Starts polling and listening for nudges. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.stopping = false;
    if (this.o.releaseLeasesOnStart) await releaseAllLeases(this.db);
    this.unsubscribe = this.signals.deliveriesWritten.on(() => this.nudge());
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
      if (!(await anyDue(this.db, this.local))) return;
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
    // A last claim first: what this node wrote just before (a drained session's end) goes out
    // within the grace, instead of waiting for another node or the next start. A full run saw
    // a draining node, the last of its cluster, exit with its session's event unsent when its
    // pump was spaced out on a loaded machine.
    this.maybeMore = true;
    if (this.pumping) this.pumpAgain = true;
    else await this.pump();
    while (this.pumping) await new Promise((r) => setTimeout(r, 5));
    this.stopping = true;
    this.unsubscribe?.();
    clearInterval(this.pollTimer);
    clearTimeout(this.retryTimer);
    for (const t of this.followUps) clearTimeout(t);
    this.followUps.clear();
    while (this.pumping) await new Promise((r) => setTimeout(r, 5));
    for (const id of [...this.queues.keys()]) this.releaseBuffered(id, 0);
    if (this.inFlight > 0) {
      await Promise.race([this.allSettled(), new Promise((r) => setTimeout(r, graceMs))]);
      for (const c of this.controllers) c.abort();
      await this.allSettled();
    }
    await this.outcomes.drain();
    this.agents.http.destroy();
    this.agents.https.destroy();
    this.started = false;
  }

  stats(): DeliveryWorkerStats {
    return deliveryStats(this.inFlight, this.counters, this.outcomes.pending);
  }

  private allSettled(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((r) => this.settledWaiters.push(r));
  }

  private limitFor(webhookId: string): number {
    return this.slow.has(webhookId) ? this.o.slowWebhookConcurrency : this.o.perWebhookConcurrency;
  }

  /** Rows a webhook may hold (in flight and buffered). */
  private holdFor(webhookId: string): number {
    return this.slow.has(webhookId) ? HOLD_FACTOR * this.o.slowWebhookConcurrency : FAST_HOLD_FACTOR * this.o.perWebhookConcurrency;
  }

  private held(webhookId: string): number {
    return (this.inFlightBy.get(webhookId) ?? 0) + (this.queues.get(webhookId)?.length ?? 0);
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
          const room = BUFFER_FACTOR * this.o.concurrency - this.buffered;
          if (room <= 0) break;
          const { claimed, more, full } = await this.claim(room);
          this.maybeMore = more;
          const at = Date.now();
          for (const c of claimed) {
            const q = this.queues.get(c.webhook_id);
            const b: Buffered = { ...c, claimedAt: at };
            if (q) q.push(b);
            else this.queues.set(c.webhook_id, [b]);
          }
          this.buffered += claimed.length;
          this.dispatch();
          // Claim again at once only when the room, not the webhooks' caps, ended this claim;
          // a capped webhook asks again as its queue runs low (launch), with a large claim.
          if (!full) break;
        }
      } while (this.pumpAgain && !this.stopping);
    } catch (err) {
      // The database is unavailable or busy: the next poll tries again.
      this.logger.warn({ err }, 'claiming webhook deliveries failed');
    } finally {
      this.pumping = false;
    }
  }

  /**
   * Sends buffered rows while slots are free, each webhook's oldest first and within its
   * limit; webhooks take turns (a queue that sent goes to the back). Rows that could no
   * longer finish inside their lease are given back, whether or not their webhook has a slot.
   */
  private dispatch(): void {
    if (this.buffered === 0 || this.stopping) return;
    // A row must be sent early enough to finish well inside its lease.
    const latestClaim = Date.now() - (this.o.leaseMs - this.o.requestTimeoutMs - 1000);
    for (const [id, q] of [...this.queues]) {
      let expired = 0;
      while (expired < q.length && q[expired].claimedAt < latestClaim) expired++;
      if (expired > 0) this.releaseBuffered(id, q.length - expired, true);
      if (this.inFlight >= this.o.concurrency) continue;
      const limit = this.limitFor(id);
      let sent = 0;
      while (q.length > 0 && this.inFlight < this.o.concurrency && (this.inFlightBy.get(id) ?? 0) < limit) {
        this.buffered--;
        sent++;
        this.launch(q.shift()!);
      }
      if (q.length === 0) this.queues.delete(id);
      else if (sent > 0) {
        this.queues.delete(id);
        this.queues.set(id, q);
      }
    }
  }

  /**
   * Gives back a webhook's buffered rows (their lease is cleared at the next flush) so that
   * `keep` remain: the newest ones, or with `oldest` the oldest ones.
   */
  private releaseBuffered(webhookId: string, keep: number, oldest = false): void {
    const q = this.queues.get(webhookId);
    if (!q || q.length <= keep) return;
    const given = oldest ? q.splice(0, q.length - keep) : q.splice(keep);
    this.buffered -= given.length;
    if (q.length === 0) this.queues.delete(webhookId);
    this.outcomes.add(...given.map(givenBack));
  }

  /**
   * Claims up to `room` due rows, each webhook within what it may still hold. `more`: due
   * rows may be left; `full`: the claim took all it looked at, so others may be waiting.
   */
  private async claim(room: number): Promise<{ claimed: Claimed[]; more: boolean; full: boolean }> {
    this.lastClaimAt = performance.now();
    const capFor = (id: string) => this.holdFor(id) - this.held(id);
    const forgetBefore = Date.now() - SLOW_MEMORY_MS;
    for (const [id, at] of this.slow) if (at < forgetBefore) this.slow.delete(id);
    const known = new Set([...this.inFlightBy.keys(), ...this.queues.keys(), ...this.slow.keys()]);
    const caps = [...known].map((id) => [id, capFor(id)] as const);
    // A webhook holding more than three quarters of its share takes nothing now (it claims
    // again when its queue runs low): the claim's candidates are left to other webhooks, and
    // a draining backlog is claimed in large pieces, not in the few rows sent since the last.
    const isOpen = ([id, cap]: readonly [string, number]) => cap > 0 && cap * 4 >= this.holdFor(id);
    const saturated = caps.filter((c) => !isOpen(c)).map(([id]) => id);
    const open = caps.filter(isOpen);
    const token = `${this.nodeId}:${++this.claimSeq}`;
    const defaultCap = FAST_HOLD_FACTOR * this.o.perWebhookConcurrency;
    // The claim looks at this many candidates: no more than the known webhooks may take and
    // one new webhook's share (a claim scanning the whole buffer's room to take a few
    // dozen rows for one webhook cost more than the rows); a next claim takes the rest.
    const limit = Math.min(
      room,
      open.reduce((n, [, cap]) => n + cap, defaultCap),
    );
    const rows = await claimDue(this.db, { saturated, room: limit, open, defaultCap, token, leaseMs: this.o.leaseMs }, this.local);
    // Schedule order (UPDATE ... RETURNING keeps none).
    this.lastClaimMs = performance.now() - this.lastClaimAt;
    this.planner.maybeAnalyze(this.lastClaimMs, rows.length);
    rows.sort(bySchedule);
    const per = new Map<string, number>();
    for (const r of rows) per.set(r.webhook_id, (per.get(r.webhook_id) ?? 0) + 1);
    // Against the caps the claim was given, not ones computed now: requests finishing during
    // the claim raise a webhook's cap, and a claim that filled the old cap then read as "no
    // more due", leaving a backlog to the next poll (a second later) once the buffer ran dry.
    const capAtClaim = new Map(open);
    const hitCap = [...per].some(([id, n]) => n >= (capAtClaim.get(id) ?? defaultCap));
    const full = rows.length === limit;
    return { claimed: rows.map((r) => ({ ...r, token })), more: full || saturated.length > 0 || hitCap, full };
  }

  private launch(c: Claimed): void {
    this.inFlight++;
    DeliveryWorker.bump(this.inFlightBy, c.webhook_id, 1);
    const controller = new AbortController();
    this.controllers.add(controller);
    attempt(c, this.attemptOptions, controller.signal).then((result) => {
      this.controllers.delete(controller);
      if (!result.aborted) {
        if (wasSlow(result)) {
          this.slow.set(c.webhook_id, Date.now());
          // It may now hold only a slow webhook's share: the rest goes back for others.
          this.releaseBuffered(c.webhook_id, Math.max(0, this.holdFor(c.webhook_id) - (this.inFlightBy.get(c.webhook_id) ?? 0)));
        } else {
          this.slow.delete(c.webhook_id);
        }
      }
      this.outcomes.add({ claim: c, result });
      if (!result.aborted) this.signals.deliveryAttempted.emit(c.event_id);
      this.inFlight--;
      DeliveryWorker.bump(this.inFlightBy, c.webhook_id, -1);
      if (this.inFlight === 0) for (const w of this.settledWaiters.splice(0)) w();
      if (this.stopping) return;
      this.dispatch();
      // Refill before this webhook's buffered rows run out: at half its hold, so a claim
      // brings many rows and the other half still covers the claim's own time under load
      // (at a quarter, a fast receiver emptied the buffer while a PostgreSQL claim ran). A
      // claim under way brings rows already: asking again would only add an empty claim.
      if (this.maybeMore && !this.pumping && (this.queues.get(c.webhook_id)?.length ?? 0) <= this.holdFor(c.webhook_id) / 2) this.schedulePump();
    });
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
