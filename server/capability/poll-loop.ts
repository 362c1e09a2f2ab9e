// A worker's loop over queued work (batch items, task runs): one pass at a time, again soon
// while work waits, seldom while idle, and at once when nudged (new work, freed capacity).
// stop() lets the pass under way finish; what the pass started is the worker's to wait for.
// A pass that throws (the database is restarting) does not end the loop: the next ones come
// after a growing pause, and the loop resumes its pace once a pass succeeds.
import type { Logger } from 'pino';
import { isDatabaseUnavailable } from '../store/unavailable.js';

/** The longest pause after failed passes: a database back is noticed within this. */
const MAX_BACKOFF_MS = 2_000;

export interface PollLoopOptions {
  /** For the log line of a pass that threw. */
  name: string;
  log: Logger;
  busyMs: number;
  idleMs: number;
  /** One pass; answers whether work waits (then the next pass comes after busyMs). */
  tick(): Promise<boolean>;
}

export class PollLoop {
  private stopped = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private woken = false;
  /** Passes that threw in a row. */
  private failures = 0;

  constructor(private readonly o: PollLoopOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  nudge(): void {
    this.woken = true;
    this.wake?.();
  }

  /** False once stop() was called (and on a second call, at once). */
  async stop(): Promise<boolean> {
    if (this.stopped) return false;
    this.stopped = true;
    this.wake?.();
    await this.loop;
    return true;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let busy = false;
      try {
        busy = await this.o.tick();
        if (this.failures > 0) this.o.log.info({ failedPasses: this.failures }, `${this.o.name} resumed`);
        this.failures = 0;
      } catch (err) {
        this.failures++;
        // An outage is logged once (the database logs its own); any other failure each time.
        if (!isDatabaseUnavailable(err)) this.o.log.error({ err }, `${this.o.name} tick failed`);
        else if (this.failures === 1) this.o.log.warn({ reason: err.reason }, `${this.o.name} waits for the database`);
      }
      if (this.stopped) break;
      if (this.woken && this.failures === 0) {
        this.woken = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const backoff = Math.min(MAX_BACKOFF_MS, this.o.busyMs * 2 ** this.failures);
        const timer = setTimeout(resolve, this.failures > 0 ? backoff : busy ? this.o.busyMs : this.o.idleMs);
        timer.unref();
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
      this.woken = false;
    }
  }
}
