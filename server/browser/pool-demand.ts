// How many warm browsers the pool should hold: enough to cover the creations that arrive
// while one launch takes its time (Little's law: rate x launch time), on top of the floor the
// operator keeps, within a ceiling (a memory budget over what one warm browser is measured
// to hold), and back to the floor once no creation has asked for a while. It grows only
// once a creation has found the pool empty: a floor that keeps up is left alone.

/** Demands kept to estimate the rate: the last this many, or those within WINDOW_MS. */
const SAMPLES = 32;
const WINDOW_MS = 30_000;

export class PoolDemand {
  private readonly asked: number[] = [];
  /** Smoothed wall time of a pool launch, in ms (a first guess until one is measured). */
  private launchMs = 1_000;
  /** Smoothed memory of one warm browser, in bytes (unknown until one is measured). */
  private browserBytes: number | undefined;

  constructor(
    private readonly o: {
      /** Kept warm whatever the demand. */
      floor: number;
      /** Never more than this many (0: no growth beyond the floor). */
      max: number;
      /** Warm browsers' memory the pool may hold, in bytes (undefined: no budget). */
      budgetBytes?: number;
      /** No demand for this long: back to the floor. */
      idleMs: number;
    },
  ) {}

  /** When a creation last found the pool empty. */
  private lastMiss = -Infinity;

  /** A creation asked the pool for a browser; `served` false: it found none ready. */
  ask(served: boolean, now = Date.now()): void {
    this.asked.push(now);
    if (this.asked.length > SAMPLES) this.asked.shift();
    if (!served) this.lastMiss = now;
  }

  /** A pool launch took `ms`; its browser holds `bytes` (when measured). */
  launched(ms: number, bytes?: number): void {
    this.launchMs = 0.7 * this.launchMs + 0.3 * ms;
    if (bytes !== undefined && bytes > 0) this.browserBytes = this.browserBytes === undefined ? bytes : 0.7 * this.browserBytes + 0.3 * bytes;
  }

  /**
   * Creations per ms over the recent window; 0 when idle, and 0 while the floor has served
   * every creation of the last idleMs (growth is for a demand the floor does not meet).
   */
  rate(now = Date.now()): number {
    if (now - this.lastMiss > this.o.idleMs) return 0;
    const recent = this.asked.filter((t) => now - t <= WINDOW_MS);
    const last = recent[recent.length - 1];
    if (recent.length < 2 || last === undefined || now - last > this.o.idleMs) return 0;
    // Over the span from the first recent demand to now: a burst that stopped decays.
    return (recent.length - 1) / Math.max(now - recent[0]!, 1);
  }

  /** The most warm browsers the ceiling and the memory budget allow. */
  ceiling(): number {
    const byMemory = this.o.budgetBytes === undefined || this.browserBytes === undefined ? Infinity : Math.floor(this.o.budgetBytes / this.browserBytes);
    return Math.max(this.o.floor, Math.min(this.o.max, byMemory));
  }

  /** Warm browsers to hold now. */
  target(now = Date.now()): number {
    const wanted = this.o.floor + Math.ceil(this.rate(now) * this.launchMs);
    return Math.min(this.ceiling(), Math.max(this.o.floor, wanted));
  }
}
