// Provisions batch items on this node, asynchronously: claims waiting items while there is
// browser capacity (MAX_CONCURRENT_BROWSERS) and fewer than BATCH_CONCURRENCY in flight,
// creates each item's session through the SessionManager (capacity, credits, the project's
// caps; not the per-key creation rate, which is for the API), and records the outcome. An
// item that finds no capacity goes back to the queue; items still waiting when their
// batch's queue deadline passes fail with that reason.
//
// Restart: the items this node was provisioning when it stopped are settled from the
// sessions table before anything new is claimed (store.recoverNode), so none is
// provisioned twice; the waiting ones are simply claimed again.
//
// The database going away mid-drain: an item whose session could not be made because of it
// goes back to the queue, and an item's outcome is recorded once the database is back (both
// retried until they commit), so the batch resumes and its counts add up without a restart.
import type { Logger } from 'pino';
import { PollLoop, type LeftNode, type Signals } from '../capability/index.js';
import type { Db } from '../store/db.js';
import { isDatabaseUnavailable, untilCommitted } from '../store/unavailable.js';
import type { ServiceConfig } from '../config/config.js';
import type { CreateOptions, CreateResult } from '../sessions/index.js';
import * as store from './store.js';

/** What the worker needs of the SessionManager. */
export interface BatchSessions {
  readonly nodeId: string;
  /** Browsers that may still start now. */
  readonly capacity: number;
  create(owner: { projectId: string; apiKeyId: string }, body: store.SessionCreateBody | undefined, options: CreateOptions): Promise<CreateResult>;
}

export interface BatchWorkerOptions {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: BatchSessions;
  /** Told: a batch's end event written. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}

/** How often the worker looks for work while items wait (it is also woken on new batches). */
const BUSY_TICK_MS = 200;
const IDLE_TICK_MS = 1_000;
/** Queue deadlines are checked at most this often. */
const EXPIRE_EVERY_MS = 1_000;

export const RESTART_ERROR = 'The server restarted while this session was starting';
export const NODE_DEAD_ERROR = 'The node provisioning this session stopped while it was starting';

export class BatchWorker {
  private readonly inflight = new Set<Promise<void>>();
  private readonly polling: PollLoop;
  private lastExpiry = 0;
  /** Aborted at stop: outcomes still waiting for the database are left to recoverNode. */
  private readonly giveUp = new AbortController();

  constructor(private readonly o: BatchWorkerOptions) {
    this.polling = new PollLoop({ name: 'batch worker', log: o.log, busyMs: BUSY_TICK_MS, idleMs: IDLE_TICK_MS, tick: () => this.tick() });
  }

  async start(): Promise<void> {
    const r = await store.recoverNode(this.o.db, this.o.signals, this.o.sessions.nodeId, RESTART_ERROR);
    if (r.completed + r.failed + r.requeued > 0) this.o.log.warn(r, 'settled the batch items a previous run was provisioning');
    this.polling.start();
  }

  /** Another node died: its items are settled like a restart's (a session that ran: completed;
   *  one that was starting: failed; none made: back in the queue, for any node). */
  async recoverNode(node: LeftNode): Promise<void> {
    const r = await store.recoverNode(this.o.db, this.o.signals, node.id, NODE_DEAD_ERROR, node.before);
    if (r.completed + r.failed + r.requeued > 0) this.o.log.warn({ ...r, nodeId: node.id }, 'settled the batch items a dead node was provisioning');
    if (r.requeued > 0) this.nudge();
  }

  /** New work (a batch) or freed capacity: look now rather than at the next tick. */
  nudge(): void {
    this.polling.nudge();
  }

  /** Stops claiming, and waits for the items in flight to be recorded. */
  async stop(): Promise<void> {
    if (!(await this.polling.stop())) return;
    this.giveUp.abort();
    await Promise.allSettled([...this.inflight]);
  }

  /** One pass: fail what waited too long, claim what fits. Answers whether items wait. */
  private async tick(): Promise<boolean> {
    const { db, config, sessions } = this.o;
    // A node without browsers (MAX_CONCURRENT_BROWSERS=0) claims no item: it does not ask
    // (the nodes with browsers also expire what waited too long).
    if (config.maxConcurrentBrowsers === 0) return false;
    // Idle, the usual state: one cheap look rather than an expiry pass and a claim (together
    // about 4 ms of an embedded database's CPU every second, for nothing).
    if (this.inflight.size === 0 && !(await store.anyWaiting(db))) return false;
    if (Date.now() - this.lastExpiry >= EXPIRE_EVERY_MS) {
      this.lastExpiry = Date.now();
      await store.expireDue(
        db,
        this.o.signals,
        () => `Queue timeout: no browser became available within ${config.batchQueueTimeoutSeconds} s of the batch's creation`,
      );
    }
    const free = Math.min(config.batchConcurrency - this.inflight.size, sessions.capacity);
    if (free <= 0) return this.inflight.size > 0 || (await store.anyWaiting(db));
    const items = await store.claimItems(db, sessions.nodeId, free);
    for (const item of items) {
      const p: Promise<void> = this.provision(item).finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
    return items.length > 0 || this.inflight.size > 0 || (await store.anyWaiting(db));
  }

  private async provision(item: store.ClaimedItem): Promise<void> {
    const { db, log, sessions } = this.o;
    let result: CreateResult | 'database_unavailable';
    try {
      result = await sessions.create({ projectId: item.projectId, apiKeyId: item.apiKeyId }, item.configuration, {
        internal: true,
        sessionId: item.sessionId,
        batchId: item.batchId,
      });
    } catch (err) {
      if (isDatabaseUnavailable(err)) {
        result = 'database_unavailable';
      } else {
        log.error({ err, batchId: item.batchId, itemIndex: item.itemIndex }, 'batch item creation threw');
        result = { ok: false, status: 500, message: 'The session could not be created' };
      }
    }
    const outcome = result;
    const record = async () => {
      if (outcome === 'database_unavailable') {
        // Not the item's fault: it waits again, and gets a new session id at its next claim.
        // A session row the attempt left is ended by the SessionManager (launch_failed)
        // once the database is back; it was never handed to anyone.
        await store.releaseItem(db, item);
      } else if (outcome.ok) {
        await store.finishItem(db, this.o.signals, item, { status: 'completed' });
        this.nudge();
      } else if (outcome.status === 429) {
        // Internal creations skip the rate limit: a 429 is the concurrent-browser limit,
        // reached between the claim and the creation. Wait for capacity in the queue.
        await store.releaseItem(db, item);
      } else {
        await store.finishItem(db, this.o.signals, item, { status: 'failed', error: outcome.message });
        this.nudge();
      }
    };
    try {
      await untilCommitted(`batch ${item.batchId} item ${item.itemIndex}`, record, { log, signal: this.giveUp.signal });
    } catch (err) {
      // Left provisioning: the next start of this node settles it (recoverNode).
      log.error({ err, batchId: item.batchId, itemIndex: item.itemIndex }, 'could not record a batch item');
    }
  }
}
