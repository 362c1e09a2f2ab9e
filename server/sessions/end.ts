// The durable end of a session, on every path (API, timeout, crash, shutdown): its CDP
// clients cut, its browser torn down, and its end recorded once (record-end.ts) while the
// teardown runs. While the database is unavailable the end is retried until it commits and
// the browser goes all the same; a caller that must answer now (a request) hears of the
// failure at once (answerNow); shutdown stops waiting after a grace (giveUp) and leaves the
// rest to the next start, which fails the sessions this node left.
import { closeMeteredBrowser } from '../browser/index.js';
import type { EndReason, LeftNode, SessionEnd } from '../capability/index.js';
import { isDatabaseUnavailable, untilCommitted, type DatabaseUnavailableError } from '../store/unavailable.js';
import type { CdpAccess } from './cdp-access.js';
import type { EndRequest, StepDeps } from './live.js';
import { EndRecorder, recordEnds, type SessionUsage } from './record-end.js';
import * as store from './store.js';

export interface EndOptions {
  deleted?: boolean;
  answerNow?: boolean;
  /**
   * The browser is frozen (SIGSTOP) when the end begins and torn down once this settles,
   * not at once: a caller that reports something right after the end is recorded (a
   * task run, its outcome) does so without the teardown's CPU beside it. The returned
   * promise still waits for the teardown.
   */
  teardownAfter?: Promise<unknown>;
}

export class SessionEnds {
  /** ended hooks still running (recordings being encoded): shutdown waits for them. */
  private readonly afterEnd = new Set<Promise<void>>();
  /**
   * Ends not recorded yet (the database is unavailable), by session id: each is retried until
   * it commits, and a second end() of the session waits for the same one, so a session ends
   * once, with the usage read when its browser closed.
   */
  private readonly unrecorded = new Map<string, Promise<store.SessionRow | undefined>>();
  /** Why the last attempt to record a session's end failed, while its retries go on. */
  private readonly recordFailing = new Map<string, DatabaseUnavailableError>();
  /** Callers of end() that answer at once (answerNow) and wait to hear of such a failure. */
  private readonly failWaiters = new Map<string, Set<(err: DatabaseUnavailableError) => void>>();
  /** Aborted when shutdown stops waiting for the database. */
  private readonly givenUp = new AbortController();
  /** Ends asked for at the same moment (shutdown, a timeout sweep) commit together. */
  private readonly ends: EndRecorder;

  constructor(private readonly o: StepDeps & { cdp: Pick<CdpAccess, 'proxy'> }) {
    this.ends = new EndRecorder(o, isDatabaseUnavailable);
  }

  /**
   * Ends a session on this node; resolves with its ended row (undefined if it had ended).
   * answerNow: rejects with DatabaseUnavailableError as soon as recording the end fails for
   * that reason, for a caller that must answer now (a request); the browser is gone all the
   * same, and the end is recorded once the database is back.
   */
  end(id: string, status: 'completed' | 'failed', reason: EndReason, options: EndOptions = {}): Promise<store.SessionRow | undefined> {
    const ending = this.endUnanswered(id, status, reason, options);
    return options.answerNow ? this.answerNow(id, ending) : ending;
  }

  /** Ends a session from a timer or a watcher, where nobody awaits the end: failures are logged. */
  endUnattended(id: string, status: 'completed' | 'failed', reason: EndReason): void {
    this.end(id, status, reason).catch((err: unknown) => this.o.log.error({ err, sessionId: id, reason }, 'could not record the end of a session'));
  }

  /** The sessions a node left unfinished (this one killed, or another claimed dead): failed,
   *  each once (an end is recorded once), with session.failed and its credits settled. Their
   *  browsers are the dead machine's business (its restart sweeps them). */
  async failSessionsOf(node: LeftNode): Promise<number> {
    // Failed together: one transaction and one outbox statement per hundred, not per session.
    const left = await store.unfinishedOnNode(this.o.db, node.id, node.before);
    const ended = await recordEnds(
      this.o,
      left.map((row) => ({ id: row.id, status: 'failed' as const, reason: 'browser_pod_not_found' as const })),
    );
    return ended.filter(Boolean).length;
  }

  /** Ends whose recording still waits for the database. */
  get unrecordedCount(): number {
    return this.unrecorded.size;
  }

  /** Shutdown stops waiting for the database: the ends still retrying give up. */
  giveUp(): void {
    this.givenUp.abort();
  }

  /** Settles once every end being recorded has committed or given up. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.unrecorded.values()]);
  }

  /** Resolves once the ended hooks running now have finished (recordings encoded). */
  async afterEnds(): Promise<void> {
    await Promise.all(this.afterEnd);
  }

  private answerNow(id: string, ending: Promise<store.SessionRow | undefined>): Promise<store.SessionRow | undefined> {
    return new Promise((resolve, reject) => {
      let waiters = this.failWaiters.get(id);
      if (!waiters) this.failWaiters.set(id, (waiters = new Set()));
      waiters.add(reject);
      ending.then(resolve, reject).finally(() => {
        waiters.delete(reject);
        if (waiters.size === 0 && this.failWaiters.get(id) === waiters) this.failWaiters.delete(id);
      });
      const failing = this.recordFailing.get(id);
      if (failing) reject(failing);
    });
  }

  private endUnanswered(id: string, status: 'completed' | 'failed', reason: EndReason, options: EndOptions): Promise<store.SessionRow | undefined> {
    const { table } = this.o;
    const live = table.live.get(id);
    if (!live) {
      const pending = this.unrecorded.get(id);
      if (pending) return pending;
      // Still launching: abort the launch; create() closes whatever it had started.
      const request: EndRequest = { status, reason, deleted: options.deleted ?? false };
      table.starting.get(id)?.abort(request);
      return this.ends.record({ id, status, reason, deleted: options.deleted ?? false });
    }
    live.ending ??= (async () => {
      this.o.cdp.proxy.closeSession(id);
      await this.o.sessionHooks.ending?.(live);
      live.cdp.close();
      // Frozen before its traffic is read: nothing it does after goes unmetered.
      if (options.teardownAfter) live.browser.freeze();
      const traffic = live.traffic.stats();
      // The end is recorded while the browser is torn down: the figures are final (the
      // traffic was read above, the CDP clients are gone), and a crash in between is
      // swept at the next start.
      // While the database is unavailable the end waits to be recorded, and the browser
      // goes all the same: the session leaves this node's count when its browser is gone.
      const gate = options.teardownAfter?.then(
        () => undefined,
        () => undefined,
      );
      const closing = (gate ? gate.then(() => closeMeteredBrowser(live)) : closeMeteredBrowser(live)).finally(() => table.live.delete(id));
      let row: store.SessionRow | undefined;
      try {
        row = await this.recordDurably(id, status, reason, { ...traffic, steps: live.steps, screenshots: live.screenshots }, options.deleted ?? false);
      } finally {
        await closing;
      }
      if (row) {
        const end = { status: row.status as SessionEnd['status'], reason, endedAt: row.ended_at ?? new Date() };
        const after = Promise.resolve(this.o.sessionHooks.ended?.(live, end));
        this.afterEnd.add(after);
        void after.finally(() => this.afterEnd.delete(after));
      }
      return row;
    })();
    return live.ending;
  }

  /**
   * Records a session's end (record-end.ts), retrying while the database is unavailable
   * until it commits; one record a session however often it is asked.
   */
  recordDurably(
    id: string,
    status: 'completed' | 'failed',
    reason: EndReason,
    usage: SessionUsage | undefined,
    deleted: boolean,
  ): Promise<store.SessionRow | undefined> {
    const pending = this.unrecorded.get(id);
    if (pending) return pending;
    const o = { log: this.o.log.child({ sessionId: id }), signal: this.givenUp.signal };
    let interrupted = false;
    const recording = untilCommitted(
      `the end of session ${id}`,
      () =>
        this.ends.record({ id, status, reason, usage, deleted }).catch((err: unknown) => {
          if (isDatabaseUnavailable(err)) {
            interrupted = true;
            this.recordFailing.set(id, err);
            for (const tell of this.failWaiters.get(id) ?? []) tell(err);
          }
          throw err;
        }),
      o,
    ).then(async (row) => {
      // A connection lost while COMMIT was answered may have committed the end that failed
      // here: the retry then finds the row ended, by this very end, and ended hooks still run.
      if (row || !interrupted) return row;
      return untilCommitted(`the end of session ${id}`, () => store.endedAs(this.o.db, id, status, reason), o);
    });
    this.unrecorded.set(id, recording);
    void recording
      .finally(() => {
        this.unrecorded.delete(id);
        this.recordFailing.delete(id);
        this.failWaiters.delete(id);
      })
      .catch(() => {});
    return recording;
  }
}
