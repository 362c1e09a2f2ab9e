import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { launchBrowser } from './launch.js';
import { autogroupNice, prioritiesWork } from './cpu-priority.js';
import { BrowserPool } from './pool.js';
import { findRootProcesses } from './procfs.js';
import { chromiumPath, eventually, leftovers, listDir, ownerOf, tempBrowsersDir, testLog } from './test-support.js';

const log = testLog();
let browsersDir: string;
let pool: BrowserPool | undefined;
/** Browsers a test took from the pool: its own to close (the pool's close misses them), here
 *  whatever the test found, before their roots are removed. */
let taken: { close(): Promise<void> }[] = [];

beforeEach(() => {
  browsersDir = tempBrowsersDir();
});

afterEach(async () => {
  await Promise.all(taken.splice(0).map((b) => b.close()));
  await pool?.close();
  pool = undefined;
  rmSync(browsersDir, { recursive: true, force: true });
});

/** Any process whose command line names a root under browsersDir. */
const processesUnder = (dir: string) => findRootProcesses({ marker: 'none', rootDir: dir });
const headless = { ...DEFAULT_LAUNCH_OPTIONS, headless: true };

describe('BrowserPool', () => {
  it('hands out warm default browsers at once, records the session, and refills', async () => {
    pool = new BrowserPool({ size: 2, browsersDir, chromiumPath, log });
    await pool.whenFull();
    expect(pool.available).toBe(2);
    expect(pool.fits({ ...DEFAULT_LAUNCH_OPTIONS })).toBe(true);
    expect(pool.fits({ ...DEFAULT_LAUNCH_OPTIONS, headless: true })).toBe(false);

    const started = performance.now();
    const browser = pool.take('session-1');
    expect(performance.now() - started).toBeLessThan(50);
    expect(browser).toBeDefined();
    expect(pool.available).toBe(1);
    // The root keeps its pool name; owner.json says which session it serves.
    expect(browser!.rootDir.startsWith(join(browsersDir, 'pool-'))).toBe(true);
    expect(ownerOf(browser!.rootDir).sessionId).toBe('session-1');

    const pw = await chromium.connectOverCDP(browser!.wsEndpoint);
    const page = pw.contexts()[0]!.pages()[0]!;
    expect(await page.evaluate(() => [innerWidth, innerHeight, 6 * 7])).toEqual([1440, 900, 42]);
    expect(browser!.display).toMatch(/^:\d+$/); // the defaults are headful
    await pw.close();

    await pool.whenFull();
    expect(pool.available).toBe(2);
    const owner = ownerOf(browser!.rootDir);
    await browser!.close();
    expect(leftovers(owner)).toEqual([]);

    const anonymous = pool.take()!;
    expect(ownerOf(anonymous.rootDir).sessionId).toBeNull();
    await anonymous.close();

    await pool.close();
    expect(pool.take()).toBeUndefined();
    expect(listDir(browsersDir)).toEqual([]);
    expect(processesUnder(browsersDir)).toEqual([]);
  });

  it('replaces a warm browser that dies', async () => {
    pool = new BrowserPool({ size: 1, browsersDir, chromiumPath, log, launchOptions: headless });
    await pool.whenFull();
    const [first] = listDir(browsersDir).filter((d) => d.startsWith('pool-'));
    const owner = ownerOf(join(browsersDir, first!));
    process.kill(owner.pids[0]!, 'SIGKILL');

    await eventually(
      () => {
        const roots = listDir(browsersDir).filter((d) => d.startsWith('pool-'));
        return pool!.available === 1 && roots.length === 1 && roots[0] !== first;
      },
      30_000,
      'a replacement',
    );
    expect(leftovers(owner)).toEqual([]);
    const replacement = pool.take()!;
    expect(replacement.rootDir).not.toBe(join(browsersDir, first!));
    await replacement.close();
  });

  it("starts the replacement a moment after a take, not during the new session's first steps", async () => {
    let launches = 0;
    pool = new BrowserPool({
      size: 1,
      browsersDir,
      chromiumPath,
      log,
      launch: (rootDir, signal) => {
        launches++;
        return launchBrowser(headless, { chromiumPath, rootDir, log, sessionId: null, signal });
      },
    });
    await pool.whenFull();
    expect(launches).toBe(1);
    const taken = pool.take('session-1')!;
    await new Promise((r) => setImmediate(r));
    expect(launches).toBe(1); // a refill started at once would have called launch by now
    expect(pool.available).toBe(0);
    await pool.whenFull();
    expect(launches).toBe(2);
    await taken.close();
  });

  it('hands a creation the launch under way rather than none, and lets it go to a cold launch when that fails', async () => {
    let launches = 0;
    let failNext = false;
    pool = new BrowserPool({
      size: 1,
      browsersDir,
      chromiumPath,
      log,
      refillDelayMs: 0,
      retryDelayMs: 60_000,
      launch: async (rootDir, signal) => {
        launches++;
        if (failNext) {
          // A fake launch that takes a while to fail, so a creation is waiting on it: not a wait.
          await new Promise((r) => setTimeout(r, 200));
          throw new Error('no display');
        }
        return launchBrowser(headless, { chromiumPath, rootDir, log, sessionId: null, signal });
      },
    });
    await pool.whenFull();
    const first = pool.take('session-1')!;
    // The refill is launching now: the next creation gets it, not undefined.
    const secondSoon = pool.takeSoon('session-2');
    // One launch under way, already waited for: a second creation does not queue behind it.
    expect(await pool.takeSoon('session-x')).toBeUndefined();
    failNext = true; // for the launches after this one
    const second = await secondSoon;
    taken.push(first, ...(second ? [second] : []));
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    expect(ownerOf(second!.rootDir).sessionId).toBe('session-2');
    // Its own refill fails while a creation waits for it: the creation is let go, for a cold launch.
    expect(await pool.takeSoon('session-3')).toBeUndefined();
    expect(launches).toBe(3);
    // While the pool backs off, and for an aborted creation, there is nothing to wait for.
    const started = performance.now();
    expect(await pool.takeSoon('session-4')).toBeUndefined();
    expect(await pool.takeSoon('session-5', AbortSignal.abort())).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(100);
  });

  it('grows while browsers are asked for faster than one launches, and shrinks back when idle', async () => {
    const launchHeadless = (rootDir: string, signal: AbortSignal) => launchBrowser(headless, { chromiumPath, rootDir, log, sessionId: null, signal });
    pool = new BrowserPool({ size: 1, max: 3, idleMs: 10_000, parallel: 2, browsersDir, chromiumPath, log, launch: launchHeadless });
    await pool.whenFull();
    const roots = () => listDir(browsersDir).filter((d) => d.startsWith('pool-')).length;
    // Three creations at once: far more than one launch's time covers.
    const taken = [pool.take('a'), pool.take('b'), pool.take('c')].filter((b) => b !== undefined);
    expect(pool.target).toBe(3);
    await Promise.all(taken.map((b) => b.close()));
    // Two launches at once: the pool holds more than its floor (three, unless the burst's
    // rate, which decays while nobody asks, has called for fewer by the time they are up).
    await eventually(() => pool!.available >= 2, 45_000, 'the pool grown past one');
    // Nobody asks any more: back to one warm browser, the others closed and their roots gone.
    await eventually(() => pool!.available === 1 && roots() === 1, 30_000, 'the pool shrunk back to one');
    expect(pool.target).toBe(1);
    await pool.close();
    expect(listDir(browsersDir)).toEqual([]);
    expect(processesUnder(browsersDir)).toEqual([]);
  });

  it.skipIf(!prioritiesWork())('starts refills at a background CPU weight and gives a taken browser its full share', async () => {
    pool = new BrowserPool({
      size: 1,
      refillDelayMs: 0,
      browsersDir,
      chromiumPath,
      log,
      onTake: (b) => b.foreground(),
      launch: (rootDir, signal) => launchBrowser(headless, { chromiumPath, rootDir, log, sessionId: null, signal, background: true }),
    });
    await pool.whenFull();
    const [root] = listDir(browsersDir).filter((d) => d.startsWith('pool-'));
    const pid = ownerOf(join(browsersDir, root!)).pids[0]!;
    expect(autogroupNice(pid)).toBe(15);
    const taken = pool.take('session-1')!;
    expect(taken.pid).toBe(pid);
    expect(autogroupNice(pid)).toBe(0);
    // Its replacement starts at once (refillDelayMs 0), at the background weight.
    await pool.whenFull();
    const next = listDir(browsersDir).find((d) => d.startsWith('pool-') && d !== root)!;
    expect(autogroupNice(ownerOf(join(browsersDir, next)).pids[0]!)).toBe(15);
    await taken.close();
  });

  it('does nothing with size 0', async () => {
    pool = new BrowserPool({ size: 0, browsersDir, chromiumPath, log });
    await pool.whenFull();
    expect(pool.take()).toBeUndefined();
    expect(listDir(browsersDir)).toEqual([]);
  });

  it('aborts a launch in progress when closed, leaving nothing', async () => {
    pool = new BrowserPool({ size: 1, browsersDir, chromiumPath, log, launchOptions: headless });
    await eventually(() => listDir(browsersDir).some((d) => d.startsWith('pool-')), 10_000, 'a launch to start');
    await pool.close();
    expect(pool.available).toBe(0);
    expect(listDir(browsersDir)).toEqual([]);
    expect(processesUnder(browsersDir)).toEqual([]);
  });

  it('retries a failing launch with backoff instead of spinning', async () => {
    const failing = testLog();
    pool = new BrowserPool({
      size: 1,
      browsersDir,
      chromiumPath: '/nonexistent/chromium',
      log: failing,
      launchOptions: { ...headless, fullscreen: true },
      retryDelayMs: 200,
    });
    // The period is what is tested: how many attempts the backoff lets into one second.
    await new Promise((r) => setTimeout(r, 1_000));
    // 200 + 400 ms of waits fit in a second: three attempts at most, not hundreds.
    const failures = failing.errors.filter((m) => m === 'pool browser launch failed').length;
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThanOrEqual(4);
    await pool.close();
    expect(listDir(browsersDir)).toEqual([]);
  });
});
