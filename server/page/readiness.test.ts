// readyThenProbe on real pages: the probe rides on the last quiet check, so it sees the page
// as it is once ready; a probe that throws, or a page that never settles, answers undefined.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { launchBrowser, type RunningBrowser } from '../browser/launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from '../browser/launch-options.js';
import { chromiumPath, tempBrowsersDir, testLog } from '../browser/test-support.js';
import { connectOverPipe } from '../browser/cdp-pipe.js';
import { inPage, inPageAll } from './in-page.js';
import { NetworkTracker, readyThenProbe } from './readiness.js';

describe('readyThenProbe', () => {
  let dir: string;
  let running: RunningBrowser;
  let browser: Browser;
  let fx: FixtureServer;

  beforeAll(async () => {
    fx = await startFixtureServer();
    dir = tempBrowsersDir();
    running = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: true }, { chromiumPath, rootDir: join(dir, 'r'), log: testLog() });
    browser = await connectOverPipe(running.pipe, { artifactsDir: join(running.rootDir, 'tmp'), isLocal: true });
  });

  afterAll(async () => {
    await running?.close();
    rmSync(dir, { recursive: true, force: true });
    await fx?.close();
  });

  async function onPage<T>(path: string, fn: (page: Page, tracker: NetworkTracker) => Promise<T>): Promise<T> {
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const tracker = new NetworkTracker(page);
      await page.goto(`${fx.url}${path}`, { waitUntil: 'commit' });
      return await fn(page, tracker);
    } finally {
      await context.close();
    }
  }

  const renderedText = () => document.getElementById('rendered')?.textContent ?? null;
  const title = () => document.title;

  it('answers the probes once the script-rendered content is in place', async () => {
    const look = await onPage('/site/script-rendered.html', (page, tracker) =>
      readyThenProbe<{ rendered: string | null; title: string }>(
        page,
        tracker,
        { deadline: Date.now() + 30_000 },
        inPageAll({ rendered: inPage(renderedText), title: inPage(title) }),
      ),
    );
    expect(look).toEqual({ rendered: 'Rendered by script: fixture #42', title: 'Script-rendered fixture' });
  });

  it('answers undefined for a probe that throws, and still returns once the page is ready', async () => {
    const throwing = () => {
      throw new Error('probe failed');
    };
    const look = await onPage('/site/script-rendered.html', (page, tracker) =>
      readyThenProbe(page, tracker, { deadline: Date.now() + 30_000 }, inPage(throwing)),
    );
    expect(look).toBeUndefined();
  });

  it('answers undefined for a page that never settles, at the bound', async () => {
    const look = await onPage('/site/never-settles.html', (page, tracker) =>
      readyThenProbe(page, tracker, { deadline: Date.now() + 30_000, maxSettleMs: 1500 }, inPage(title)),
    );
    expect(look).toBeUndefined();
  });

  it('keeps its bound while the page cannot answer (its main thread busy)', async () => {
    // A renderer busy for 20 s (a long task here; a machine out of CPU does the same to a
    // ticking page) answers no evaluation until it is done: the bound is the server's.
    const took = await onPage('/site/script-rendered.html', async (page, tracker) => {
      await page.waitForLoadState('load');
      await page.evaluate(
        () =>
          void setTimeout(() => {
            for (const end = Date.now() + 20_000; Date.now() < end; );
          }, 100),
      );
      const started = Date.now();
      expect(await readyThenProbe(page, tracker, { deadline: Date.now() + 30_000, maxSettleMs: 1500 }, inPage(title))).toBeUndefined();
      return Date.now() - started;
    });
    expect(took).toBeLessThan(10_000);
  });
});
