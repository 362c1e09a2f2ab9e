// wheelAndSettle on real Chromium: once it returns, the scroll the wheel started has run to
// its end (the page, or the element under the pointer), and a wheel that moves nothing returns.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type RunningBrowser } from '../browser/launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from '../browser/launch-options.js';
import { chromiumPath, tempBrowsersDir, testLog } from '../browser/test-support.js';
import { connectOverPipe } from '../browser/cdp-pipe.js';
import { wheelAndSettle } from './wheel.js';

describe('wheelAndSettle', () => {
  let dir: string;
  let running: RunningBrowser;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    dir = tempBrowsersDir();
    running = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: true }, { chromiumPath, rootDir: join(dir, 'r'), log: testLog() });
    browser = await connectOverPipe(running.pipe, { artifactsDir: join(running.rootDir, 'tmp'), isLocal: true });
    page = await (await browser.newContext({ viewport: { width: 800, height: 600 } })).newPage();
  });
  afterAll(async () => {
    await running?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const scrollY = () => page.evaluate(() => window.scrollY);

  it('returns once the page has scrolled the whole way, down and up', async () => {
    await page.setContent('<div style="height: 5000px">tall</div>');
    await page.mouse.move(400, 300);
    await wheelAndSettle(page, 0, 600);
    expect(await scrollY()).toBe(600);
    await wheelAndSettle(page, 0, 600);
    expect(await scrollY()).toBe(1200);
    await wheelAndSettle(page, 0, -600);
    expect(await scrollY()).toBe(600);
  });

  it('waits for the element under the pointer when that is what scrolls', async () => {
    await page.setContent(
      '<div id="inner" style="width: 400px; height: 200px; overflow: auto"><div style="height: 3000px">inside</div></div><div style="height: 100px"></div>',
    );
    await page.mouse.move(100, 100);
    await wheelAndSettle(page, 0, 300);
    expect(await page.evaluate(() => document.getElementById('inner')!.scrollTop)).toBe(300);
    expect(await scrollY()).toBe(0);
  });

  it('returns when nothing can scroll that way', async () => {
    await page.setContent('<p>short</p>');
    await page.mouse.move(400, 300);
    await wheelAndSettle(page, 0, 600);
    expect(await scrollY()).toBe(0);
  });
});
