// A worker's loop over queued work (batch items, task runs): one pass at a time, again soon
// while work waits, seldom while idle, and at once when nudged (new work, freed capacity).
// stop() lets the pass under way finish; what the pass started is the worker's to wait for.
import type { Logger } from 'pino';

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
      } catch (err) {
        this.o.log.error({ err }, `${this.o.name} tick failed`);
      }
      if (this.stopped) break;
      if (this.woken) {
        this.woken = false;
        continue;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, busy ? this.o.busyMs : this.o.idleMs);
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
