// The delivery worker's outcomes, written together: an attempt's outcome waits here until
// FLUSH_LINGER_MS has passed or FLUSH_BATCH are waiting, then one statement records them all
// (delivery-record.ts). Each statement costs about as much as a few dozen rows in it, so
// while draining, batches of a handful (a 5 ms linger) spent more on statements than on
// rows; on PGlite a row costs ~200 µs of CPU in a batch of 16, ~100 in one of 128. An
// outcome waiting here delays only its row's status, never a receipt; the worker's stop()
// writes what is left (drain()).
import type { Db } from '../store/db.js';
import type { LocalLeases } from './delivery-claim.js';
import type { DeliveryLogger, ResolvedOptions } from './delivery-options.js';
import { recordOutcomes, type Outcome } from './delivery-record.js';
import { countAttempt, type DeliveryCounters } from './delivery-stats.js';

const FLUSH_LINGER_MS = 100;
const FLUSH_BATCH = 512;

export class OutcomeWriter {
  private readonly outcomes: Outcome[] = [];
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly o: {
      db: Db;
      local: LocalLeases | undefined;
      options: Pick<ResolvedOptions, 'retrySchedule' | 'random'>;
      logger: DeliveryLogger;
      /** Counts each recorded attempt's status. */
      counters: DeliveryCounters;
      /** Told the soonest retry the recorded outcomes scheduled, in ms from now. */
      retryIn(ms: number): void;
      /** True once the worker stops: a failed write is then not tried again on a timer. */
      stopping(): boolean;
    },
  ) {}

  /** Outcomes not recorded yet. */
  get pending(): number {
    return this.outcomes.length;
  }

  add(...outcomes: Outcome[]): void {
    this.outcomes.push(...outcomes);
    if (this.outcomes.length >= FLUSH_BATCH) {
      clearTimeout(this.timer);
      this.timer = undefined;
      void this.flush().catch((err) => this.o.logger.warn({ err }, 'recording webhook outcomes failed; retrying'));
      return;
    }
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch((err) => this.o.logger.warn({ err }, 'recording webhook outcomes failed; retrying'));
    }, FLUSH_LINGER_MS);
  }

  /** At shutdown: records every outcome, including those a flush already in progress is writing. */
  async drain(): Promise<void> {
    clearTimeout(this.timer);
    for (let i = 0; i < 5 && (this.outcomes.length > 0 || this.flushing); i++) {
      await (this.flushing ?? this.flush()).catch((err) => this.o.logger.error({ err }, 'recording webhook outcomes failed at shutdown'));
    }
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
            if (!this.o.stopping()) {
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

  /** Records a batch (delivery-record.ts), then counts what was recorded and tells the soonest retry. */
  private async record(batch: Outcome[]): Promise<void> {
    const { db, local, options } = this.o;
    const { statuses, earliestRetryMs } = await recordOutcomes(db, batch, { schedule: options.retrySchedule, random: options.random }, local);
    for (const status of statuses) countAttempt(this.o.counters, status);
    if (earliestRetryMs < Infinity) this.o.retryIn(earliestRetryMs);
  }
}
