import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { launchBrowser } from './launch.js';
import { BrowserPool } from './pool.js';
import { findRootProcesses } from './procfs.js';
import { chromiumPath, eventually, leftovers, listDir, ownerOf, tempBrowsersDir, testLog } from './test-support.js';

const log = testLog();
let browsersDir: string;
let pool: BrowserPool | undefined;

beforeEach(() => {
  browsersDir = tempBrowsersDir();
});

afterEach(async () => {
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
