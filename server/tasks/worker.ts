// Runs queued task executions on this node, asynchronously: claims queued runs while fewer
// than TASK_CONCURRENCY run here and a browser may start (MAX_CONCURRENT_BROWSERS), and
// runs each (run.ts). A run whose session finds no free browser goes back to the queue.
// A run asked of this node while it has room and nothing waits in the queue is this node's
// from its insert (reserve): no claim, no wait for the loop.
//
// Cancel: the API marks the run (any node); the node running it sees the mark at its next
// tick, or at once when the API call came to it, and aborts the sandbox.
// Restart: the runs this node was running when it was killed fail with system_error, each
// with its task.failed, before anything new is claimed (recover).
// Shutdown: runs in flight are stopped and fail with system_error.
import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import { PollLoop, type LeftNode } from '../capability/index.js';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import * as queue from './queue-store.js';
import { executeRun, runDir, type RunDeps, type StopReason } from './run.js';
import { taskEvent } from './events.js';
import type { WarmPairs } from './warm-pair.js';

const BUSY_TICK_MS = 200;
const IDLE_TICK_MS = 1_000;

export class TaskWorker {
  private readonly inflight = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Places promised to runs being inserted (reserve), not yet started. */
  private reserved = 0;
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly polling: PollLoop;
  /** Work was announced (nudge) since the last pass: that pass claims without asking first. */
  private announced = false;
  private stopping = false;

  constructor(private readonly o: RunDeps & { db: Db; config: ServiceConfig; log: Logger; warm?: Pick<WarmPairs, 'take' | 'fill' | 'stop'> }) {
    this.polling = new PollLoop({ name: 'task worker', log: o.log, busyMs: BUSY_TICK_MS, idleMs: IDLE_TICK_MS, tick: () => this.tick() });
  }

  async start(): Promise<void> {
    await this.recover({ id: this.o.sessions.nodeId });
    this.polling.start();
  }

  /** Another node died (claimed dead by this one): its runs fail as a restart's would. */
  async recoverNode(node: LeftNode): Promise<void> {
    await this.recover(node);
  }

  /** The runs a killed node left running (this node's predecessor, or another node found dead):
   *  failed, once across the cluster (finish is conditional), with task.failed. */
  private async recover(node: LeftNode): Promise<void> {
    const { db, config, log } = this.o;
    const own = node.id === this.o.sessions.nodeId;
    const left = await queue.runningOn(db, node.id, node.before);
    for (const row of left) {
      // The sessions capability, started (or recovering) before this one, has already ended
      // the sessions of the killed node, and settled their credits.
      const s = row.session_id ? await queue.sessionFacts(db, row.session_id) : undefined;
      const durationMs = row.started_at ? Date.now() - new Date(row.started_at).getTime() : 0;
      const message = own ? 'The server stopped while the task was running' : 'The node running the task stopped while the task was running';
      const rootCause = own
        ? 'The server process ended during the run (killed or crashed); it was marked failed at its next start'
        : `Node ${node.id} stopped heartbeating during the run (killed, crashed or cut off); another node marked the run failed`;
      const done = await queue.finish(
        db,
        this.o.signals,
        row.id,
        {
          outcome: { status: 'failure', error: { type: 'system_error', message, rootCause } },
          durationMs,
          costCredits: row.own_session ? Number(s?.credits_used ?? 0) : 0,
          logs: row.logs ?? [],
          sessionId: row.session_id,
        },
        (r) => taskEvent(r, { artifacts: [] }, config.publicUrl),
      );
      if (done) log.warn({ executionId: row.id, nodeId: node.id }, 'failed a task run a killed node left running');
      // What the killed run had saved and not yet stored (on this machine: only our own).
      if (own) await rm(runDir(config, row.id), { recursive: true, force: true });
    }
  }

  /** New work: look now rather than at the next tick. */
  nudge(): void {
    this.announced = true;
    this.polling.nudge();
  }

  /**
   * A place for a run about to be inserted, when this node has room now: the run then starts
   * here from its insert (take, with the row inserted as claimed by this node), or the place
   * is given back (the run was queued behind others, or not inserted). `nodeId`: the node the
   * row is inserted as claimed by.
   */
  reserve(): { nodeId: string; take(row: queue.ClaimedRow): void; giveBack(): void } | undefined {
    if (this.stopping || this.free() <= 0) return undefined;
    this.reserved++;
    let open = true;
    const close = () => {
      if (!open) return false;
      open = false;
      this.reserved--;
      return true;
    };
    return {
      nodeId: this.o.sessions.nodeId,
      take: (row) => {
        if (!close()) return;
        // Stopping meanwhile: the run goes back to the queue, for the next start or another node.
        if (this.stopping)
          void queue.release(this.o.db, row.id).catch((err: unknown) => this.o.log.error({ err, executionId: row.id }, 'could not queue a run again'));
        else this.runClaimed(row);
      },
      giveBack: () => {
        if (close()) this.nudge();
      },
    };
  }

  /** Runs this node may start now: within TASK_CONCURRENCY and the browsers it may still launch. */
  private free(): number {
    return Math.min(this.o.config.taskConcurrency - this.inflight.size - this.reserved, this.o.sessions.capacity - this.reserved);
  }

  /** Stops the run if it runs here; answers whether it did. */
  abort(executionId: string, reason: StopReason): boolean {
    const run = this.inflight.get(executionId);
    if (!run) return false;
    run.abort.abort(reason);
    return true;
  }

  /** Resolves when the run ends on this node (or after `ms`, whichever is first); callers re-read the row. */
  waitLocal(executionId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const set = this.waiters.get(executionId) ?? new Set();
      this.waiters.set(executionId, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.waiters.delete(executionId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      set.add(done);
    });
  }

  ended(executionId: string): void {
    for (const w of [...(this.waiters.get(executionId) ?? [])]) w();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (await this.polling.stop()) {
      for (const run of this.inflight.values()) run.abort.abort('shutdown' satisfies StopReason);
      await Promise.allSettled([...this.inflight.values()].map((r) => r.done));
    }
    // The warm pair waiting for a run: its browser and its sandbox end now.
    await this.o.warm?.stop();
  }

  /** One pass: stop what was cancelled elsewhere, claim what fits. Answers whether work waits. */
  private async tick(): Promise<boolean> {
    const { db, sessions } = this.o;
    // A node without browsers (MAX_CONCURRENT_BROWSERS=0) claims no run: it does not ask.
    // Each look is a statement a second a node (bench/control-plane).
    if (this.o.config.maxConcurrentBrowsers === 0) return false;
    if (this.inflight.size > 0) {
      for (const id of await queue.cancelRequested(db, sessions.nodeId)) this.abort(id, 'cancel');
    }
    // Idle passes ask cheaply whether anything waits before claiming; a pass for announced
    // work claims at once (a run starts one round trip sooner).
    const announced = this.announced;
    this.announced = false;
    if (this.inflight.size === 0 && !announced && !(await queue.anyQueued(db))) return false;
    // A run needs a browser unless it runs in an existing session; counting every run as
    // needing one keeps the claim simple and never over-commits.
    const free = this.free();
    if (free <= 0) return true;
    const rows = await queue.claim(db, sessions.nodeId, free);
    for (const row of rows) this.runClaimed(row);
    return rows.length > 0 || this.inflight.size > 0;
  }

  /** Runs a run claimed by this node, in the background. */
  private runClaimed(row: queue.ClaimedRow): void {
    const abort = new AbortController();
    const done = executeRun(this.o, row, abort.signal)
      .then(() => undefined)
      .catch(async (err: unknown) => {
        this.o.log.error({ err, executionId: row.id }, 'task run failed unexpectedly');
        // Not left running until the next start: failed now, with its event, if it can be.
        await queue
          .finish(
            this.o.db,
            this.o.signals,
            row.id,
            {
              outcome: {
                status: 'failure',
                error: { type: 'system_error', message: 'The server could not finish the run', rootCause: (err as Error)?.message ?? String(err) },
              },
              durationMs: row.started_at ? Date.now() - new Date(row.started_at).getTime() : 0,
              costCredits: 0,
              logs: [],
              sessionId: null,
            },
            (r) => taskEvent(r, { artifacts: [] }, this.o.config.publicUrl),
          )
          .catch((again: unknown) => this.o.log.error({ err: again, executionId: row.id }, 'could not record the failed run; the next start will'));
      })
      .finally(() => {
        this.inflight.delete(row.id);
        this.ended(row.id);
        this.nudge();
      });
    this.inflight.set(row.id, { abort, done });
  }
}
