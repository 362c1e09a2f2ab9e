// Playwright over a real browser's --remote-debugging-pipe: messages larger than one pipe
// read, many at once, and the end of the browser seen as a disconnect.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type RunningBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { chromiumPath, tempBrowsersDir, testLog } from './test-support.js';
import { connectOverPipe } from './cdp-pipe.js';

describe('Playwright over the CDP pipe', () => {
  let dir: string;
  let running: RunningBrowser;

  beforeAll(async () => {
    dir = tempBrowsersDir();
    running = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: true }, { chromiumPath, rootDir: join(dir, 'p'), log: testLog() });
  });

  afterAll(async () => {
    await running?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('drives pages, carries large and concurrent messages, and reports the browser ending', async () => {
    const browser = await connectOverPipe(running.pipe, { artifactsDir: join(running.rootDir, 'tmp'), isLocal: true });
    expect(browser.version()).toMatch(/^\d+\./);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.setContent('<p>pipe</p>');
    expect(await page.textContent('p')).toBe('pipe');
    // 3 MB in one answer: many reads of the pipe make up one message.
    const big = await page.evaluate(() => 'x'.repeat(3_000_000) + 'end');
    expect(big.length).toBe(3_000_003);
    expect(big.endsWith('xend')).toBe(true);
    // Many answers at once: several messages in one read.
    const values = await Promise.all(Array.from({ length: 50 }, (_, i) => page.evaluate((n) => n * 2, i)));
    expect(values).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    const disconnected = new Promise<void>((r) => browser.once('disconnected', () => r()));
    await running.close();
    await disconnected;
    expect(browser.isConnected()).toBe(false);
  });
});
