// What a session's browser sends on its own, seen by its traffic proxy: a page with a form
// costs no query to Chromium's autofill server (DISABLED_FEATURES), which would otherwise be
// metered as the session's traffic and listed among the domains it visited; nor, in its
// first seconds, the update and account checks that --disable-component-update and
// --disable-sync alone do not stop.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectOverSocket } from './cdp-socket.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { closeMeteredBrowser, launchMeteredBrowser } from './metered.js';
import { chromiumPath, tempBrowsersDir, testLog } from './test-support.js';

const FORM = `<!doctype html><title>Sign up</title>
<form action="/done"><label>Email <input name="email" type="email" autocomplete="email"></label>
<label>Name <input name="name" autocomplete="name"></label><button>Send</button></form>`;

describe('a session browser behind its traffic proxy', () => {
  let site: Server;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    site = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(FORM);
    });
    await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    dir = tempBrowsersDir();
  });

  /** A headless session browser behind its own traffic proxy, its root under `name`. */
  const launch = (name: string) =>
    launchMeteredBrowser(
      { ...DEFAULT_LAUNCH_OPTIONS, headless: true },
      { chromiumPath, rootDir: join(dir, name), log: testLog() },
      { allowPrivateNetworks: true, log: pino({ level: 'silent' }) },
    );

  afterAll(async () => {
    await new Promise((r) => site?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends nothing but its pages for the pages it loads, no autofill query for their forms', async () => {
    const metered = await launch('b');
    try {
      const browser = await connectOverSocket(metered.browser.wsEndpoint);
      const page = browser.contexts()[0]!.pages()[0]!;
      // Chromium asks about a form's fields as it parses the page, filled or not; three
      // pages with forms, one after the other, give it every chance to.
      for (const path of ['/a', '/b', '/c']) {
        await page.goto(`${base}${path}`);
        await page.fill('input[name=email]', 'someone@example.com');
      }
      await browser.close();
    } finally {
      await closeMeteredBrowser(metered);
    }
    const { domains } = metered.traffic.stats();
    // The site's pages, and nothing else: no autofill query, nor any other call of Chromium's own.
    expect(domains).toEqual(['127.0.0.1']);
  });

  it('sends nothing of its own in its first 15 s: no update check, no account check', async () => {
    const metered = await launch('c');
    try {
      // Without --component-updater=url-source (flags.ts), Chromium 156 sent an update check to
      // update.googleapis.com 8-12 s after its start; without --gaia-url, account checks to
      // accounts.google.com from 2 s on. Its one tab is about:blank: any domain is its own.
      await new Promise((r) => setTimeout(r, 15_000));
    } finally {
      await closeMeteredBrowser(metered);
    }
    expect(metered.traffic.stats().domains).toEqual([]);
  });
});
