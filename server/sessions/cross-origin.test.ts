// browser.cross_origin_support (the vendor's option): site isolation off, so a page's
// cross-site iframe runs in the page's own process and CDP target instead of a target of its
// own; with disable_web_security too, the page's scripts read into it.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { HEADLESS, createSession, endSession } from './test-support.js';

describe('browser.cross_origin_support', () => {
  let server: TestServer;
  let sites: Server[];
  let port: number;

  beforeAll(async () => {
    server = await startTestServer();
    // Two sites, 127.0.0.2 framing 127.0.0.3, on one port. Not 127.0.0.1: Chromium always
    // isolates its sign-in origin, which --gaia-url points there (flags.ts).
    const handler: RequestListener = (req, res) => {
      res.setHeader('content-type', 'text/html');
      if (req.url === '/child') return void res.end('<title>Child</title><p>inside the frame</p>');
      res.end(`<title>Parent</title><iframe src="http://127.0.0.3:${port}/child"></iframe>`);
    };
    const first = createServer(handler);
    await new Promise<void>((resolve) => first.listen(0, '127.0.0.2', resolve));
    port = (first.address() as AddressInfo).port;
    const second = createServer(handler);
    await new Promise<void>((resolve) => second.listen(port, '127.0.0.3', resolve));
    sites = [first, second];
  });
  afterAll(async () => {
    await server?.close();
    await Promise.all((sites ?? []).map((s) => new Promise((resolve) => s.close(resolve))));
  });

  /** Opens the parent page in the session; answers its iframe targets and what its script reads of the frame. */
  async function visit(cdpUrl: string): Promise<{ iframeTargets: number; frameTitle: string }> {
    const browser = await chromium.connectOverCDP(cdpUrl);
    try {
      const page = browser.contexts()[0]!.pages()[0]!;
      await page.goto(`http://127.0.0.2:${port}/parent`);
      await page.frameLocator('iframe').locator('p').waitFor();
      const cdp = await browser.newBrowserCDPSession();
      const { targetInfos } = (await cdp.send('Target.getTargets')) as { targetInfos: { type: string }[] };
      const frameTitle = await page.evaluate(() => {
        try {
          return document.querySelector('iframe')!.contentDocument?.title ?? 'no document';
        } catch (err) {
          return `refused: ${(err as Error).name}`;
        }
      });
      return { iframeTargets: targetInfos.filter((t) => t.type === 'iframe').length, frameTitle };
    } finally {
      await browser.close();
    }
  }

  it('turned off (accepted, the default), a cross-site iframe is a target of its own; turned on, it is part of its page, and readable with disable_web_security', async () => {
    const off = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, cross_origin_support: { active: false } } });
    const on = await createSession(server, {
      ...HEADLESS,
      browser: { ...HEADLESS.browser, cross_origin_support: { active: true }, disable_web_security: { active: true } },
    });
    try {
      const isolated = await visit(off.cdp_url);
      expect(isolated.iframeTargets).toBe(1);
      expect(isolated.frameTitle).toMatch(/^refused|no document/);
      const shared = await visit(on.cdp_url);
      expect(shared).toEqual({ iframeTargets: 0, frameTitle: 'Child' });
    } finally {
      await Promise.all([endSession(server, off.id), endSession(server, on.id)]);
    }
  });
});
