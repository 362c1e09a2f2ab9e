// What a session's browser sends on its own, seen by its traffic proxy: a page with a form
// costs no query to Chromium's autofill server (DISABLED_FEATURES), a submitted password no
// leak check (launch.ts's preferences), either of which would otherwise be metered as the
// session's traffic and listed among the domains it visited; nor, in its first seconds, do
// the update and account checks that --disable-component-update and --disable-sync alone
// do not stop.
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

const FORM = `<!doctype html><title>Sign in</title>
<form method="post" action="/done"><label>Email <input name="email" type="email" autocomplete="username"></label>
<label>Name <input name="name" autocomplete="name"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label><button>Sign in</button></form>`;

describe('a session browser behind its traffic proxy', () => {
  let site: Server;
  let base: string;
  let dir: string;

  beforeAll(async () => {
    site = createServer((req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      // A page without the form after the submission: Chromium takes a sign-in whose form
      // comes back for a failed one, and checks only the passwords of those that worked.
      res.end(req.url === '/done' ? '<!doctype html><title>Welcome</title><p>Signed in.</p>' : FORM);
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

  it('sends nothing but its pages: no autofill query for their forms, no leak check of the passwords it submits', async () => {
    const metered = await launch('b');
    try {
      const browser = await connectOverSocket(metered.browser.wsEndpoint);
      const page = browser.contexts()[0]!.pages()[0]!;
      // Chromium asks about a form's fields as it parses the page, filled or not, and checks a
      // submitted password against Google's leaked ones (launch.ts turns that off) once the
      // form is sent; three pages with forms, one after the other, give it every chance to.
      for (const path of ['/a', '/b', '/c']) {
        await page.goto(`${base}${path}`);
        await page.fill('input[name=email]', 'someone@example.com');
        await page.fill('input[name=password]', 'password123');
        await Promise.all([page.waitForURL('**/done'), page.click('button')]);
      }
      // The leak check leaves a moment after the submission.
      // Negative: a request that must not come has no event to wait for; a window it would fall in.
      await new Promise((r) => setTimeout(r, 2_000));
      await browser.close();
    } finally {
      await closeMeteredBrowser(metered);
    }
    // The site's pages, and nothing else: none of Chromium's own calls.
    expect(metered.traffic.stats().domains).toEqual(['127.0.0.1']);
  });

  it('sends nothing of its own in its first 15 s: no update check, no account check', async () => {
    const metered = await launch('c');
    try {
      // Without --component-updater=url-source (flags.ts), Chromium 156 sent an update check to
      // update.googleapis.com 8-12 s after its start; without --gaia-url, account checks to
      // accounts.google.com from 2 s on. Its one tab is about:blank: any domain is its own.
      // Negative, and the period is the claim: the 15 s the test's name promises (checks came by 12 s).
      await new Promise((r) => setTimeout(r, 15_000));
    } finally {
      await closeMeteredBrowser(metered);
    }
    expect(metered.traffic.stats().domains).toEqual([]);
  });
});
