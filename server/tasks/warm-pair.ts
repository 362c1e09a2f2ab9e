// A task run's warm pair: a browser reserved from the warm pool (the run's session to be,
// SessionManager.reserveWarm) and a sandbox already connected to it (Sandbox.prepare:
// Playwright's connectOverCDP done, through the CDP proxy, as to the session), so that a run
// whose configuration the pool's browser serves starts its code without waiting for either.
// Measured (bench/task-run.ts): the sandbox's connect was some 40 ms of a run's 200.
//
// The two belong together for good: the sandbox's relay is bound to that browser's
// endpoint, and the browser is never given to anything but the run that takes the pair. A
// run takes the pair and makes its session with CreateOptions.reserved; if the session is
// not made on that browser, the browser is ended (by create) and the sandbox too (by the
// run). A pair nobody takes for WARM_PAIR_IDLE_MS is ended, as is a pair of which either
// half dies, and both at stop(). One pair at most; the next is built once a run took it
// and the pool has a browser again, so an idle server holds none.
import type { Logger } from 'pino';
import type { PreparedSandbox, Sandbox } from '../sandbox/index.js';
import type { WarmReservation, WarmSource } from '../sessions/index.js';

/** A pair nobody took for this long is ended (the next run builds one again). */
const WARM_PAIR_IDLE_MS = 120_000;
/** After a pair could not be built, the next attempt waits this long (no loop of failures). */
const RETRY_AFTER_MS = 30_000;

type Reservation = WarmReservation;

export interface TakenPair {
  /** The id to create the run's session with (CreateOptions.reserved). */
  reservedId: string;
  /** The sandbox connected to that browser; the taker runs on it or disposes it. */
  sandbox: PreparedSandbox;
}

export class WarmPairs {
  private pair: { reservation: Reservation; sandbox: PreparedSandbox; idle: NodeJS.Timeout } | undefined;
  private building: Promise<void> | undefined;
  private failedAt = 0;
  private stopped = false;
  private wakeOnStop!: () => void;
  private readonly stopping = new Promise<void>((resolve) => (this.wakeOnStop = resolve));

  constructor(private readonly d: { sessions: WarmSource; sandbox: Pick<Sandbox, 'available' | 'prepare'>; log: Logger }) {}

  /** Whether a pair is ready now. */
  get ready(): boolean {
    return this.pair?.sandbox.alive === true;
  }

  /** The pair, if one is ready: the caller's from here on. */
  take(): TakenPair | undefined {
    const pair = this.pair;
    if (!pair || !pair.sandbox.alive) return undefined;
    this.pair = undefined;
    clearTimeout(pair.idle);
    return { reservedId: pair.reservation.sessionId, sandbox: pair.sandbox };
  }

  /** Starts building a pair unless one is ready or being built. */
  fill(): void {
    if (this.stopped || this.pair || this.building || !this.d.sandbox.available || Date.now() - this.failedAt < RETRY_AFTER_MS) return;
    this.building = this.build()
      .catch((err: unknown) => {
        this.failedAt = Date.now();
        this.d.log.warn({ err }, 'a warm pair for task runs could not be built; runs start without one');
      })
      .finally(() => (this.building = undefined));
  }

  private async build(): Promise<void> {
    // The pool refills a moment after a take (and may not, while launches fail): stop() does not wait for it.
    await Promise.race([this.d.sessions.whenWarm(), this.stopping]);
    if (this.stopped) return;
    const reservation = this.d.sessions.reserveWarm();
    if (!reservation) return;
    let sandbox: PreparedSandbox;
    try {
      sandbox = await this.d.sandbox.prepare(reservation.cdpUrl);
    } catch (err) {
      await reservation.release();
      throw err;
    }
    if (this.stopped) {
      await Promise.all([sandbox.dispose(), reservation.release()]);
      return;
    }
    const entry = { reservation, sandbox, idle: setTimeout(() => void this.discard(entry), WARM_PAIR_IDLE_MS) };
    entry.idle.unref();
    this.pair = entry;
    this.d.log.debug({ sessionId: reservation.sessionId }, 'warm pair ready');
    // Either half gone while waiting: the other goes too.
    void reservation.lost.then(() => this.discard(entry));
    void sandbox.exited.then(() => this.discard(entry));
  }

  /** Ends the pair if it is still waiting (a taken pair is its run's). */
  private async discard(entry: NonNullable<WarmPairs['pair']>): Promise<void> {
    if (this.pair !== entry) return;
    this.pair = undefined;
    clearTimeout(entry.idle);
    await Promise.all([entry.sandbox.dispose(), entry.reservation.release()]);
  }

  /** Ends the waiting pair and any being built; builds none after. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeOnStop();
    if (this.pair) await this.discard(this.pair);
    await this.building;
  }
}
