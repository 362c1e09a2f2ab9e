// Warm browsers: Chromium launched ahead of time with the default configuration, so that
// the common session (no options) starts without waiting for a launch.
//
// Roots keep their random pool-* name for life, and take(sessionId) records the session
// in owner.json instead of renaming the directory. Renaming a live user-data-dir does not
// work (tried on Chromium 156): Chromium keeps using the old path for files it opens
// later, so cookies set before and after the rename were lost, a download was cancelled
// (the download directory had moved) and at exit Chromium re-created the old directory
// tree, which would then leak. The sweep reads the session id from owner.json.
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { launchBrowser, type RunningBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS, sameLaunchOptions, type LaunchOptions } from './launch-options.js';
import type { Log } from './log.js';

/** What the pool keeps warm: a browser, or a browser with what the caller attaches to it. */
export type Poolable = Pick<RunningBrowser, 'rootDir' | 'adopt' | 'close' | 'exited'>;

export interface BrowserPoolOptions<T extends Poolable = RunningBrowser> {
  /** Browsers kept warm; 0 disables the pool. */
  size: number;
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

export class BrowserPool<T extends Poolable = RunningBrowser> {
  readonly size: number;
  readonly launchOptions: LaunchOptions;
  private readonly idle: T[] = [];
  private closed = false;
  private closing: Promise<void> | undefined;
  private filling: Promise<void> | undefined;
  private failures = 0;
  private retryTimer: { timer: NodeJS.Timeout; wake(): void } | undefined;
  private refillTimer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private waiters: (() => void)[] = [];

  constructor(private readonly options: BrowserPoolOptions<T>) {
    this.size = Math.max(0, Math.floor(options.size));
    this.launchOptions = options.launchOptions ?? DEFAULT_LAUNCH_OPTIONS;
    this.refill();
  }

  /** Warm browsers ready to be taken. */
  get available(): number {
    return this.idle.length;
  }

  /** Whether a pooled browser serves a session launched with these options. */
  fits(options: LaunchOptions): boolean {
    return sameLaunchOptions(options, this.launchOptions);
  }

  /**
   * A warm browser, at once, or undefined when none is ready. The browser is the
   * caller's from here on (the caller closes it); the pool launches a replacement a
   * moment later (REFILL_DELAY_MS).
   */
  take(sessionId?: string): T | undefined {
    if (this.closed) return undefined;
    const browser = this.idle.shift();
    if (browser && sessionId !== undefined) browser.adopt(sessionId);
    this.refillSoon();
    return browser;
  }

  /** Resolves once the pool holds `size` warm browsers, or is closed. */
  whenFull(): Promise<void> {
    if (this.closed || this.idle.length >= this.size) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }

  /** Stops refilling, aborts a launch in progress and closes every warm browser. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      clearTimeout(this.refillTimer);
      this.abort.abort(new Error('browser pool closed'));
      this.retryTimer?.wake();
      const idle = this.idle.splice(0);
      await Promise.all([this.filling, ...idle.map((b) => b.close())]);
      this.notify();
    })();
    return this.closing;
  }

  /**
   * A launch takes most of a core for half a second. Started at once, it would compete
   * with the session that just took the browser during that session's busiest moment (its
   * client connecting and loading the first page): measured on 2 cores, every step of that
   * session's first second was 30-60 % slower. So the replacement starts a little later.
   */
  private refillSoon(): void {
    if (this.refillTimer || this.closed) return;
    this.refillTimer = setTimeout(() => {
      this.refillTimer = undefined;
      this.refill();
    }, REFILL_DELAY_MS);
    this.refillTimer.unref();
  }

  private refill(): void {
    // A take's delayed refill is pending: it decides when the next launch starts.
    if (this.closed || this.filling || this.refillTimer || this.idle.length >= this.size) return;
    this.filling = this.fill().finally(() => {
      this.filling = undefined;
      // A browser taken or crashed while the loop was finishing.
      this.refill();
    });
  }

  // One launch at a time: a launch is CPU-heavy, and sessions being created or running
  // should not be starved by the pool.
  private async fill(): Promise<void> {
    const { log } = this.options;
    while (!this.closed && this.idle.length < this.size) {
      const rootDir = join(resolve(this.options.browsersDir), `pool-${randomBytes(8).toString('hex')}`);
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
        if (this.closed) {
          await browser.close();
          break;
        }
        this.idle.push(browser);
        this.watch(browser);
        log.debug({ rootDir, available: this.idle.length }, 'pool browser ready');
        this.notify();
      } catch (err) {
        if (this.closed) break;
        this.failures++;
        const delay = Math.min((this.options.retryDelayMs ?? 1_000) * 2 ** (this.failures - 1), 60_000);
        log.error({ err: (err as Error).message, retryInMs: delay }, 'pool browser launch failed');
        await this.sleep(delay);
      }
    }
    this.notify();
  }

  /** A warm browser that dies is dropped, cleaned up and replaced. */
  private watch(browser: T): void {
    void browser.exited.then(() => {
      const i = this.idle.indexOf(browser);
      if (i < 0) return; // taken: its session handles the exit
      this.idle.splice(i, 1);
      this.options.log.warn({ rootDir: browser.rootDir }, 'pool browser died while warm: replacing it');
      void browser.close();
      this.refill();
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolveSleep) => {
      const wake = () => {
        clearTimeout(timer);
        this.retryTimer = undefined;
        resolveSleep();
      };
      const timer = setTimeout(wake, ms);
      this.retryTimer = { timer, wake };
    });
  }

  private notify(): void {
    if (!this.closed && this.idle.length < this.size) return;
    const waiters = this.waiters.splice(0);
    for (const w of waiters) w();
  }
}
