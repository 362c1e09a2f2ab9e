// The warm children: loading Playwright is most of a cold start (index.ts's header), so
// SANDBOX_WARM children are started ahead of runs. Each serves one run and is never reused:
// taking one starts the next behind it; one unused for WARM_IDLE_MS is ended; one that dies
// while waiting is replaced, unless it died before it was ready (no loop of failing starts:
// the next run starts its own and reports what went wrong).
import type { Logger } from 'pino';
import { startJailed, type Jailed } from './jailed.js';

/** A warm child nobody took for this long is ended (and started again by the next run). */
const WARM_IDLE_MS = 120_000;

export class WarmChildren {
  private readonly warm: { jailed: Jailed; idle: NodeJS.Timeout }[] = [];
  private starting = 0;
  private closed = false;

  /** `size` children, each jailed with `memoryMb`; none start before the first refill(). */
  constructor(private readonly o: { size: number; memoryMb: number; log: Logger }) {}

  /** A live warm child, out of the pool (ready or still starting), or undefined; call refill() after. */
  take(): Jailed | undefined {
    const entry = this.warm.find((e) => e.jailed.alive);
    if (!entry) return undefined;
    this.warm.splice(this.warm.indexOf(entry), 1);
    clearTimeout(entry.idle);
    return entry.jailed;
  }

  /** Starts children until the pool has its size (those starting count). */
  refill(): void {
    const { log } = this.o;
    while (!this.closed && this.warm.length + this.starting < this.o.size) {
      this.starting++;
      startJailed(this.o.memoryMb, log).then(
        (jailed) => {
          this.starting--;
          if (this.closed) return void jailed.dispose();
          const entry = { jailed, idle: setTimeout(() => this.drop(entry), WARM_IDLE_MS) };
          entry.idle.unref();
          this.warm.push(entry);
          let ready = false;
          void jailed.ready.then(
            () => {
              ready = true;
              log.debug('sandbox: a warm child is ready');
            },
            () => {},
          );
          // One that dies while waiting (killed from outside) is cleaned up and replaced;
          // one that died before it was ready is not.
          void jailed.exited.then(() => {
            if (!this.warm.includes(entry)) return;
            this.drop(entry);
            if (ready) this.refill();
            else log.error('a warm sandbox ended before it was ready; the next run starts cold');
          });
        },
        (err: unknown) => {
          this.starting--;
          log.error({ err }, 'a warm sandbox could not be started');
        },
      );
    }
  }

  /** Ends every warm child; none starts after. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.warm.splice(0).map((e) => (clearTimeout(e.idle), e.jailed.dispose())));
  }

  private drop(entry: (typeof this.warm)[number]): void {
    const at = this.warm.indexOf(entry);
    if (at !== -1) this.warm.splice(at, 1);
    clearTimeout(entry.idle);
    void entry.jailed.dispose();
  }
}
