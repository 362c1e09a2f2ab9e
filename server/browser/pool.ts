// Warm browsers: Chromium launched ahead of time with the default configuration, so that
// the common session (no options) starts without waiting for a launch.
//
// Roots keep their random pool-* name for life, and take(sessionId) records the session
// in owner.json instead of renaming the directory. Renaming a live user-data-dir does not
// work (tried on Chromium 156): Chromium keeps using the old path for files it opens
// later, so cookies set before and after the rename were lost, a download was cancelled
// (the download directory had moved) and at exit Chromium re-created the old directory
// tree, which would then leak. The sweep reads the session id from owner.json.
//
// The pool holds `size` browsers whatever the demand, and grows from the rate at which
// browsers are asked for and the time a launch takes (pool-demand.ts), up to `max` and
// within a memory budget, launching up to `parallel` at once; it shrinks back to `size`
// once nobody has asked for a while (`idleMs`).
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { launchBrowser, type RunningBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS, sameLaunchOptions, type LaunchOptions } from './launch-options.js';
import type { Log } from './log.js';
import { PoolDemand } from './pool-demand.js';

/** What the pool keeps warm: a browser, or a browser with what the caller attaches to it. */
export type Poolable = Pick<RunningBrowser, 'rootDir' | 'adopt' | 'close' | 'exited'>;

export interface BrowserPoolOptions<T extends Poolable = RunningBrowser> {
  /** Browsers kept warm whatever the demand; 0 disables the pool. */
  size: number;
  /** Most browsers the pool grows to from the demand it sees (default: size, a fixed pool). */
  max?: number;
  /** Memory all warm browsers may hold, in bytes, as memoryOf measures one (default: no budget). */
  memoryBudgetBytes?: number;
  /** What one warm browser holds, in bytes (measured once it is ready). */
  memoryOf?: (item: T) => number;
  /** No browser asked for during this long: the pool shrinks back to `size` (default 60 s). */
  idleMs?: number;
  /** Launches running at once while the pool is short (default 1). */
  parallel?: number;
  /**
   * How long after a take its replacement starts launching (default 1 s, see refillSoon);
   * 0 when the launches run at a background CPU priority and so compete with nothing.
   */
  refillDelayMs?: number;
  /** Called with each browser as it is taken (to give it its full CPU share back, say). */
  onTake?: (item: T) => void;
  /** Where roots are created (the directory sweepOrphans sweeps). */
  browsersDir: string;
  chromiumPath: string;
  log: Log;
  /** What pooled browsers are launched with (default: the session defaults). */
  launchOptions?: LaunchOptions;
  xvfbPath?: string;
  startTimeoutMs?: number;
  /** First retry delay after a failed launch; doubles up to 60 s (default 1 s). */
  retryDelayMs?: number;
  /**
   * Launches one warm item into rootDir (default: launchBrowser with launchOptions). The
   * session layer wraps each browser with its own traffic proxy here, since a proxy
   * address is part of Chromium's command line.
   */
  launch?: (rootDir: string, signal: AbortSignal) => Promise<T>;
}

/** How long after a browser is taken its replacement starts launching (see refillSoon). */
const REFILL_DELAY_MS = 1_000;
/** One browser in this many has its memory measured. */
const MEASURE_EVERY = 8;

export class BrowserPool<T extends Poolable = RunningBrowser> {
  readonly size: number;
  readonly launchOptions: LaunchOptions;
  private readonly idle: T[] = [];
  private readonly demand: PoolDemand;
  private readonly parallel: number;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Launches in progress. */
  private readonly launching = new Set<Promise<void>>();
  /** Closes of browsers the pool let go (trimmed, died while warm): close() waits for them. */
  private readonly letGo = new Set<Promise<void>>();
  private failures = 0;
  /** Backoffs after failed launches in progress (close wakes them). */
  private readonly retries = new Set<() => void>();
  private refillTimer: NodeJS.Timeout | undefined;
  private trimTimer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private waiters: (() => void)[] = [];
  /** Callers of takeSoon waiting for a launch under way, first come first served. */
  private readonly next: ((browser: T | undefined) => void)[] = [];

  constructor(private readonly options: BrowserPoolOptions<T>) {
    this.size = Math.max(0, Math.floor(options.size));
    this.launchOptions = options.launchOptions ?? DEFAULT_LAUNCH_OPTIONS;
    this.parallel = Math.max(1, Math.floor(options.parallel ?? 1));
    const idleMs = options.idleMs ?? 60_000;
    this.demand = new PoolDemand({
      floor: this.size,
      max: this.size === 0 ? 0 : Math.max(this.size, Math.floor(options.max ?? this.size)),
      ...(options.memoryBudgetBytes !== undefined ? { budgetBytes: options.memoryBudgetBytes } : {}),
      idleMs,
    });
    if (this.demand.ceiling() > this.size) {
      // A pool that grew shrinks back once the demand is gone.
      this.trimTimer = setInterval(() => this.trim(), Math.max(1_000, idleMs / 4));
      this.trimTimer.unref();
    }
    this.refill();
  }

  /** Warm browsers ready to be taken. */
  get available(): number {
    return this.idle.length;
  }

  /** Warm browsers the pool aims to hold now (size, or more while creations come fast). */
  get target(): number {
    return this.closed ? 0 : this.demand.target();
  }

  /** Whether a pooled browser serves a session launched with these options. */
  fits(options: LaunchOptions): boolean {
    return sameLaunchOptions(options, this.launchOptions);
  }

  /**
   * A warm browser, at once, or undefined when none is ready. The browser is the
   * caller's from here on (the caller closes it); the pool launches a replacement a
   * moment later (refillDelayMs). Every call counts as demand, served or not.
   */
  take(sessionId?: string): T | undefined {
    if (this.closed) return undefined;
    const browser = this.idle.shift();
    this.demand.ask(browser !== undefined);
    if (browser) this.handOut(browser, sessionId);
    this.refillSoon();
    return browser;
  }

  /**
   * take(), or, when none is ready but one is launching, that one as soon as it is ready: a
   * launch under way is nearer its end than one started now. Measured with one client's
   * sessions back to back (bench/session-loop): the refill of the browser one session took
   * was still launching when the next session came, which then launched its own, so
   * creations alternated 50 ms and 1,450 ms. Undefined, for a cold launch, when no launch is
   * under way that other creations do not already wait for (or the pool backs off after a
   * failure), or when that launch fails; `signal`
   * withdraws the wait. No deadline of its own: a launch ends by launchBrowser's, and a
   * cap of twice the usual launch time let creations go to cold launches exactly when the
   * machine was loaded (a refill runs at a background CPU weight), adding a launch to it.
   */
  async takeSoon(sessionId?: string, signal?: AbortSignal): Promise<T | undefined> {
    const ready = this.take(sessionId);
    // A pool backing off after a failed launch has nothing coming soon.
    // Only a launch no one else waits for is nearer than one started now: without a cap, a
    // creation queued behind others would wait out several launches in a row.
    if (ready || this.closed || this.launching.size <= this.next.length || this.retries.size > 0 || signal?.aborted) return ready;
    const browser = await new Promise<T | undefined>((resolve) => {
      const give = (b: T | undefined) => {
        signal?.removeEventListener('abort', withdraw);
        resolve(b);
      };
      const withdraw = () => {
        const i = this.next.indexOf(give);
        if (i >= 0) this.next.splice(i, 1);
        give(undefined);
      };
      signal?.addEventListener('abort', withdraw, { once: true });
      this.next.push(give);
    });
    if (browser) {
      this.handOut(browser, sessionId);
      this.refillSoon();
    }
    return browser;
  }

  /** A browser leaves the pool: recorded as the session's, given its full CPU share back. */
  private handOut(browser: T, sessionId: string | undefined): void {
    if (sessionId !== undefined) browser.adopt(sessionId);
    this.options.onTake?.(browser);
  }

  /** Resolves once the pool holds `size` warm browsers, or is closed. */
  whenFull(): Promise<void> {
    if (this.closed || this.idle.length >= this.size) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }

  /** Stops refilling, aborts the launches in progress and closes every warm browser. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      clearTimeout(this.refillTimer);
      clearInterval(this.trimTimer);
      this.abort.abort(new Error('browser pool closed'));
      for (const wake of [...this.retries]) wake();
      for (const give of this.next.splice(0)) give(undefined);
      const idle = this.idle.splice(0);
      await Promise.all([...this.launching, ...this.letGo, ...idle.map((b) => b.close())]);
      this.notify();
    })();
    return this.closing;
  }

  /**
   * A launch takes most of a core for half a second. Started at once, it would compete
   * with the session that just took the browser during that session's busiest moment (its
   * client connecting and loading the first page): measured on 2 cores, every step of that
   * session's first second was 30-60 % slower. So the replacement starts a little later,
   * unless the launches run at a background priority (refillDelayMs 0). A pool short of
   * more than the browser just taken (a burst) launches at once.
   */
  private refillSoon(): void {
    if (this.refillTimer || this.closed) return;
    const delay = this.options.refillDelayMs ?? REFILL_DELAY_MS;
    if (delay <= 0 || this.idle.length + this.launching.size + 1 < this.demand.target()) return this.refill();
    this.refillTimer = setTimeout(() => {
      this.refillTimer = undefined;
      this.refill();
    }, delay);
    this.refillTimer.unref();
  }

  /** Starts launches while the pool is short of its target, up to `parallel` at once. */
  private refill(): void {
    if (this.closed || this.retries.size > 0) return;
    const target = this.demand.target();
    while (this.launching.size < this.parallel && this.idle.length + this.launching.size < target) {
      const launch: Promise<void> = this.launchOne().finally(() => {
        this.launching.delete(launch);
        // A browser taken or crashed while it launched, or the demand grew.
        this.refill();
        this.notify();
      });
      this.launching.add(launch);
    }
  }

  private async launchOne(): Promise<void> {
    const { log } = this.options;
    const rootDir = join(resolve(this.options.browsersDir), `pool-${randomBytes(8).toString('hex')}`);
    const started = performance.now();
    try {
      const browser = this.options.launch
        ? await this.options.launch(rootDir, this.abort.signal)
        : ((await launchBrowser(this.launchOptions, {
            chromiumPath: this.options.chromiumPath,
            rootDir,
            log,
            sessionId: null,
            signal: this.abort.signal,
            ...(this.options.xvfbPath ? { xvfbPath: this.options.xvfbPath } : {}),
            ...(this.options.startTimeoutMs ? { startTimeoutMs: this.options.startTimeoutMs } : {}),
          })) as unknown as T);
      this.failures = 0;
      if (this.closed) return void (await browser.close());
      this.demand.launched(performance.now() - started, this.measure(browser));
      this.watch(browser);
      const waiting = this.next.shift();
      if (waiting) return waiting(browser);
      this.idle.push(browser);
      log.debug({ rootDir, available: this.idle.length }, 'pool browser ready');
    } catch (err) {
      if (this.closed) return;
      this.failures++;
      const delay = Math.min((this.options.retryDelayMs ?? 1_000) * 2 ** (this.failures - 1), 60_000);
      log.error({ err: (err as Error).message, retryInMs: delay }, 'pool browser launch failed');
      // Whoever waited for this launch launches cold rather than wait out the backoff.
      for (const give of this.next.splice(0)) give(undefined);
      await this.sleep(delay);
    }
  }

  /** Browsers launched so far: one in MEASURE_EVERY is measured (a walk of /proc, on this thread). */
  private launched = 0;

  private measure(browser: T): number | undefined {
    if (this.launched++ % MEASURE_EVERY !== 0) return undefined;
    try {
      return this.options.memoryOf?.(browser);
    } catch {
      return undefined;
    }
  }

  /** Closes warm browsers beyond the target (the demand went away), the oldest first. */
  private trim(): void {
    const target = this.demand.target();
    while (!this.closed && this.idle.length > target) {
      const extra = this.idle.shift()!;
      this.options.log.debug({ rootDir: extra.rootDir, available: this.idle.length }, 'pool shrinks: no demand');
      this.release(extra);
    }
  }

  /** Closes a browser the pool no longer holds; close() waits for it (its processes die after its root is gone). */
  private release(browser: T): void {
    const closing = browser.close().finally(() => this.letGo.delete(closing));
    this.letGo.add(closing);
  }

  /** A warm browser that dies is dropped, cleaned up and replaced. */
  private watch(browser: T): void {
    void browser.exited.then(() => {
      const i = this.idle.indexOf(browser);
      if (i < 0) return; // taken: its session handles the exit
      this.idle.splice(i, 1);
      this.options.log.warn({ rootDir: browser.rootDir }, 'pool browser died while warm: replacing it');
      this.release(browser);
      this.refill();
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolveSleep) => {
      const wake = () => {
        clearTimeout(timer);
        this.retries.delete(wake);
        resolveSleep();
      };
      const timer = setTimeout(wake, ms);
      this.retries.add(wake);
    });
  }

  private notify(): void {
    if (!this.closed && this.idle.length < this.size) return;
    const waiters = this.waiters.splice(0);
    for (const w of waiters) w();
  }
}
