// The shared set of browsers behind the web fetch, screenshot and page PDF tools. Apart from
// session browsers: no session row, no count against MAX_CONCURRENT_BROWSERS, no pool slot.
//
// FETCH_BROWSERS headless Chromium processes, launched as session browsers are
// (launchMeteredBrowser: the same flags, a root beside the sessions' roots with an
// owner.json; they exit when the server dies, and the next start removes the roots a
// killed server left), driven by Playwright over their CDP pipe with its artifacts inside
// the root.
// Each sits behind its own traffic proxy, so that every request the page makes (redirects,
// subresources, iframes, WebSockets) is checked against the address policy at connect
// time and, when the operator set FETCH_PROXY_URL, chained through that proxy.
//
// Each request gets a fresh browser context (cookies, storage and cache of its own), closed
// afterwards. At most FETCH_MAX_CONCURRENCY contexts are open at once across the browsers;
// further requests wait in a FIFO queue of at most FETCH_MAX_QUEUE (then QueueFullError) for
// no longer than their own deadline. A browser that crashed or disconnected is relaunched
// on the next request that needs it.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions } from 'playwright-core';
import type { Logger } from 'pino';
import { connectOverPipe } from '../browser/cdp-pipe.js';
import { DEFAULT_LAUNCH_OPTIONS, closeMeteredBrowser, launchMeteredBrowser, type LaunchEnv, type MeteredBrowser } from '../browser/index.js';

export interface FetchBrowsersOptions {
  chromiumPath: string;
  /** Chromium's sandbox (BROWSER_SANDBOX). */
  sandbox: boolean;
  /** Each browser's caps, as a session's (browser/cgroup.ts); absent: uncapped. */
  cgroup?: LaunchEnv['cgroup'];
  browsers: number;
  maxConcurrency: number;
  maxQueue: number;
  allowPrivateNetworks: boolean;
  /** The operator's upstream proxy (may carry credentials: never logged). */
  proxyUrl?: string;
  /** The installation's browsers directory (browsersDirFor): roots are t-<random> there. */
  browsersDir: string;
  log: Logger;
}

export class QueueFullError extends Error {
  constructor() {
    super('Too many tool requests are waiting on this server; try again shortly');
  }
}

export class QueueTimeoutError extends Error {
  constructor() {
    super('No browser became free in time');
  }
}

export class BrowsersClosedError extends Error {
  constructor() {
    super('The server is shutting down');
  }
}

interface Slot {
  index: number;
  active: number;
  /** Contexts opened over its life, for the log. */
  served: number;
  launching?: Promise<Launched>;
  launched?: Launched;
}

interface Launched {
  metered: MeteredBrowser;
  browser: Browser;
  dead: boolean;
}

export interface Lease {
  browser: Browser;
  context: BrowserContext;
}

export class FetchBrowsers {
  private readonly slots: Slot[];
  private active = 0;
  private readonly queue: { resolve: () => void; reject: (e: Error) => void }[] = [];
  private closed = false;
  private readonly closing = new Set<Promise<void>>();

  constructor(private readonly o: FetchBrowsersOptions) {
    this.slots = Array.from({ length: Math.max(1, o.browsers) }, (_, index) => ({ index, active: 0, served: 0 }));
  }

  /**
   * Nothing is launched up front: a browser starts with the first request that needs it
   * (about a second, once), and a second one only when the first is busy. A server that
   * serves no tool request (most test servers) runs no tool browser.
   */
  async start(): Promise<void> {}

  get stats() {
    return { active: this.active, queued: this.queue.length, browsers: this.slots.filter((s) => s.launched && !s.launched.dead).length };
  }

  /**
   * Runs fn with a fresh context on the least busy browser; the context is closed after.
   * Waits for a free slot until `deadline`.
   */
  async withContext<T>(
    options: BrowserContextOptions | ((browser: Browser) => BrowserContextOptions),
    deadline: number,
    fn: (lease: Lease) => Promise<T>,
  ): Promise<T> {
    await this.acquire(deadline);
    const slot = this.pick();
    slot.active++;
    slot.served++;
    let context: BrowserContext | undefined;
    try {
      const launched = await this.ensure(slot);
      context = await launched.browser.newContext(typeof options === 'function' ? options(launched.browser) : options);
      return await fn({ browser: launched.browser, context });
    } finally {
      // The answer goes out now; the context closes behind it, holding its slot until closed.
      const closing = context ? context.close().catch(() => {}) : Promise.resolve();
      this.closing.add(closing);
      void closing.finally(() => {
        this.closing.delete(closing);
        slot.active--;
        this.release();
      });
    }
  }

  private acquire(deadline: number): Promise<void> {
    if (this.closed) return Promise.reject(new BrowsersClosedError());
    if (this.active < this.o.maxConcurrency) {
      this.active++;
      return Promise.resolve();
    }
    if (this.queue.length >= this.o.maxQueue) return Promise.reject(new QueueFullError());
    return new Promise<void>((resolve, reject) => {
      const entry = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e: Error) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      const timer = setTimeout(
        () => {
          const i = this.queue.indexOf(entry);
          if (i >= 0) this.queue.splice(i, 1);
          reject(new QueueTimeoutError());
        },
        Math.max(0, deadline - Date.now()),
      );
      this.queue.push(entry);
    });
  }

  private release() {
    const next = this.queue.shift();
    if (next)
      next.resolve(); // the slot passes straight to the next in line
    else this.active--;
  }

  /** The live browser with the fewest open contexts; a not yet launched one when all are busy. */
  private pick(): Slot {
    const live = (s: Slot) => s.launched !== undefined && !s.launched.dead;
    const sorted = [...this.slots].sort((a, b) => a.active - b.active || Number(live(b)) - Number(live(a)) || a.index - b.index);
    return sorted[0];
  }

  private ensure(slot: Slot): Promise<Launched> {
    if (slot.launched && !slot.launched.dead) return Promise.resolve(slot.launched);
    if (this.closed) return Promise.reject(new BrowsersClosedError());
    if (!slot.launching) {
      const old = slot.launched;
      slot.launched = undefined;
      slot.launching = (async () => {
        if (old) await this.shut(old);
        const launched = await this.launch(slot);
        if (this.closed) {
          await this.shut(launched);
          throw new BrowsersClosedError();
        }
        slot.launched = launched;
        return launched;
      })().finally(() => {
        slot.launching = undefined;
      });
    }
    return slot.launching;
  }

  private async launch(slot: Slot): Promise<Launched> {
    const { log } = this.o;
    // No ad-block here: the tools answer what a page shows, and a page that detects a blocker
    // may put a "disable your ad blocker" wall over its content; the tool requests have no
    // option to turn it off (the vendor's has none), and their pages are read, not browsed.
    const metered = await launchMeteredBrowser(
      { ...DEFAULT_LAUNCH_OPTIONS, headless: true, adblock: false },
      {
        chromiumPath: this.o.chromiumPath,
        sandbox: this.o.sandbox,
        ...(this.o.cgroup ? { cgroup: this.o.cgroup } : {}),
        rootDir: join(this.o.browsersDir, `t-${randomBytes(6).toString('hex')}`),
        log,
        sessionId: null,
      },
      { allowPrivateNetworks: this.o.allowPrivateNetworks, upstream: this.o.proxyUrl ? { server: this.o.proxyUrl } : undefined, log },
    );
    const running = metered.browser;
    try {
      // Playwright's own temporary files (downloads among them) stay inside the root.
      const browser = await connectOverPipe(running.pipe, { artifactsDir: join(running.rootDir, 'tmp'), isLocal: true, timeout: 60_000 });
      const launched: Launched = { metered, browser, dead: false };
      const lost = () => {
        if (launched.dead) return;
        if (!this.closed) log.warn({ slot: slot.index }, 'tool browser went away; it is relaunched on demand');
        void this.shut(launched);
      };
      browser.on('disconnected', lost);
      void running.exited.then(lost);
      log.info({ slot: slot.index, version: browser.version() }, 'tool browser started');
      return launched;
    } catch (err) {
      await closeMeteredBrowser(metered).catch(() => {});
      throw err;
    }
  }

  private async shut(l: Launched): Promise<void> {
    l.dead = true;
    await l.browser.close().catch(() => {});
    await closeMeteredBrowser(l.metered).catch(() => {});
  }

  /** Refuses new work, fails the queue, and ends every browser. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.queue.splice(0)) w.reject(new BrowsersClosedError());
    await Promise.all(this.closing);
    await Promise.all(
      this.slots.map(async (slot) => {
        const l = slot.launched ?? (await slot.launching?.catch(() => undefined));
        if (l) await this.shut(l);
      }),
    );
  }
}
