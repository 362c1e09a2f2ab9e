// When a rendered page counts as ready: its `load` event has fired (or took too long), the
// network has been quiet (no request in flight) and the DOM has been quiet (no mutation) for
// a short window, all bounded so that a page that never settles (a ticker, long polling, an
// endless animation) still returns. The same rule serves the web fetch, screenshot and page
// PDF tools, and the benchmark applies it to raw Playwright for a like-for-like comparison.
import type { Page, Request } from 'playwright-core';
import { inPage } from './in-page.js';

export interface ReadinessOptions {
  /** Absolute time (ms since epoch) after which nothing more is waited for. */
  deadline: number;
  /** How long `load` may take before the page is taken as it is (default 30 s). */
  loadTimeoutMs?: number;
  /** Quiet window for the network and the DOM (default 500 ms). */
  quietMs?: number;
  /** Longest wait for quiet after `load` (default 10 s). */
  maxSettleMs?: number;
}

export const DEFAULT_QUIET_MS = 500;
export const DEFAULT_MAX_SETTLE_MS = 10_000;
export const DEFAULT_LOAD_TIMEOUT_MS = 30_000;

/** Requests older than this are taken as long-lived (long polling, streams) and not waited for. */
const LONG_LIVED_MS = 5_000;
/** Resource types that stay open by design. */
const IGNORED_TYPES = new Set(['eventsource', 'websocket', 'media', 'manifest', 'ping']);

/**
 * Counts a page's requests in flight, from Playwright's request events (every frame, the
 * page's workers' fetches excepted).
 */
export class NetworkTracker {
  private readonly inflight = new Map<Request, number>();
  private lastActivity = Date.now();
  private waiters = new Set<() => void>();
  private readonly onRequest = (r: Request) => {
    if (IGNORED_TYPES.has(r.resourceType())) return;
    this.inflight.set(r, Date.now());
    this.touch();
  };
  private readonly onDone = (r: Request) => {
    if (this.inflight.delete(r)) this.touch();
  };

  constructor(private readonly page: Page) {
    page.on('request', this.onRequest);
    page.on('requestfinished', this.onDone);
    page.on('requestfailed', this.onDone);
  }

  private touch() {
    this.lastActivity = Date.now();
    for (const w of this.waiters) w();
  }

  /** Requests in flight that are not long-lived. */
  busy(now = Date.now()): number {
    let n = 0;
    for (const started of this.inflight.values()) if (now - started < LONG_LIVED_MS) n++;
    return n;
  }

  /** Milliseconds the network has been quiet (0 while busy). */
  quietFor(now = Date.now()): number {
    if (this.busy(now) > 0) return 0;
    // A long-lived request that just crossed the threshold counts as quiet from then on.
    let since = this.lastActivity;
    for (const started of this.inflight.values()) since = Math.max(since, started + LONG_LIVED_MS);
    return Math.max(0, now - since);
  }

  /** Resolves once the network has been quiet for quietMs, or at `until`. */
  waitQuiet(quietMs: number, until: number): Promise<boolean> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        const now = Date.now();
        const quiet = this.quietFor(now);
        if (quiet >= quietMs) return finish(true);
        if (now >= until) return finish(false);
        clearTimeout(timer);
        // Re-check when the window would end, or when a long-lived request stops counting.
        let next = quiet > 0 ? quietMs - quiet : quietMs;
        for (const started of this.inflight.values()) {
          const crosses = started + LONG_LIVED_MS - now;
          if (crosses > 0) next = Math.min(next, crosses + quietMs);
        }
        timer = setTimeout(check, Math.max(10, Math.min(next, until - now)));
      };
      const finish = (ok: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(ok);
      };
      this.waiters.add(check);
      check();
    });
  }

  dispose(): void {
    this.page.off('request', this.onRequest);
    this.page.off('requestfinished', this.onDone);
    this.page.off('requestfailed', this.onDone);
    for (const w of this.waiters) w();
    this.waiters.clear();
  }
}

/** Runs in the page: resolves true once no DOM mutation happened for quietMs, false at maxMs. */
const domQuietInPage = (quietMs: number, maxMs: number) =>
  new Promise<boolean>((resolve) => {
    const start = performance.now();
    let last = start;
    const observer = new MutationObserver(() => {
      last = performance.now();
    });
    observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const tick = () => {
      const now = performance.now();
      if (now - last >= quietMs || now - start >= maxMs) {
        observer.disconnect();
        resolve(now - last >= quietMs);
      } else {
        setTimeout(tick, Math.max(10, Math.min(quietMs - (now - last), start + maxMs - now)));
      }
    };
    setTimeout(tick, quietMs);
  });

/** Whether an error means the page navigated (or closed) under an evaluation. */
export function isNavigationError(err: unknown): boolean {
  const m = String((err as Error)?.message ?? err);
  return /Execution context was destroyed|Cannot find context|navigat|Target (page, context or browser )?(has been )?closed|frame was detached|Frame has been detached/i.test(
    m,
  );
}

/**
 * Waits until the page is ready (see the top of this file). Never throws for a page that
 * does not settle: it returns when the bounds are reached. Returns whether it settled.
 */
export async function waitForReady(page: Page, tracker: NetworkTracker, options: ReadinessOptions): Promise<boolean> {
  return (await settle(page, tracker, options)).settled;
}

/**
 * waitForReady, then the in-page expression `probe` (inPage), evaluated in the same call as
 * the last quiet check: its value once the page settled; undefined when it did not, or when
 * the probe threw.
 */
export async function readyThenProbe<T>(page: Page, tracker: NetworkTracker, options: ReadinessOptions, probe: string): Promise<T | undefined> {
  const { settled, value } = await settle(page, tracker, options, probe);
  return settled ? (value as T) : undefined;
}

async function settle(page: Page, tracker: NetworkTracker, options: ReadinessOptions, probe?: string): Promise<{ settled: boolean; value?: unknown }> {
  const quietMs = options.quietMs ?? DEFAULT_QUIET_MS;
  const remaining = () => options.deadline - Date.now();
  const loadTimeout = Math.min(options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS, remaining());
  if (loadTimeout > 0) await page.waitForLoadState('load', { timeout: loadTimeout }).catch(() => {});
  const settleUntil = Math.min(options.deadline, Date.now() + (options.maxSettleMs ?? DEFAULT_MAX_SETTLE_MS));
  for (;;) {
    const left = settleUntil - Date.now();
    if (left <= 0 || page.isClosed()) return { settled: false };
    const domQuiet = inPage(domQuietInPage, quietMs, left);
    let dom: { quiet: boolean; value?: unknown };
    const checks = Promise.all([
      page.evaluate(
        probe
          ? `(async () => { const quiet = await ${domQuiet}; return { quiet, value: quiet ? await (async () => { try { return await ${probe}; } catch { return undefined; } })() : undefined }; })()`
          : domQuiet,
      ),
      tracker.waitQuiet(quietMs, settleUntil),
    ]);
    // The bound is kept here, not by the page: a renderer starved of CPU runs its own timer,
    // and answers, seconds late (at load average 17 a never-settling page's fetch took 15.3 s
    // longer than a settled page's, where the bound allows 10). What it answers after the
    // bound is not waited for.
    let bound: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (bound = setTimeout(() => r('late'), left)));
    try {
      const answer = await Promise.race([checks, late]);
      if (answer === 'late') {
        checks.catch(() => {});
        return { settled: false };
      }
      dom = probe ? (answer[0] as typeof dom) : { quiet: answer[0] as boolean };
    } catch (err) {
      if (!isNavigationError(err) || page.isClosed()) return { settled: false };
      // A script navigated the page: wait for the new document, then start over.
      const t = Math.min(options.loadTimeoutMs ?? DEFAULT_LOAD_TIMEOUT_MS, settleUntil - Date.now());
      if (t > 0) await page.waitForLoadState('load', { timeout: t }).catch(() => {});
      continue;
    } finally {
      clearTimeout(bound);
    }
    if (dom.quiet && tracker.quietFor() >= quietMs) return { settled: true, value: dom.value };
    if (Date.now() >= settleUntil) return { settled: false };
  }
}

/** Runs in the page: resolves once no finite CSS animation or transition runs, or at maxMs. */
const animationsDoneInPage = (maxMs: number) =>
  new Promise<boolean>((resolve) => {
    const start = performance.now();
    const tick = () => {
      const running = document.getAnimations().filter((a) => {
        if (a.playState !== 'running') return false;
        const end = a.effect?.getComputedTiming().endTime;
        return typeof end === 'number' && Number.isFinite(end);
      });
      if (running.length === 0 || performance.now() - start >= maxMs) resolve(running.length === 0);
      else setTimeout(tick, 50);
    };
    tick();
  });

/**
 * Waits (bounded) for finite CSS animations and transitions to end: a dialog that was just
 * dismissed fades out before it counts as gone.
 */
export async function waitForAnimations(page: Page, maxMs: number): Promise<void> {
  if (maxMs <= 0) return;
  await page.evaluate(inPage(animationsDoneInPage, maxMs)).catch(() => {});
}
