// browser.extra_stealth over cdp_url in real Chromium: a desktop GPU's WebGL names instead of
// SwiftShader's, in the first tab, a frame, and a context the user's Playwright makes, from
// the page's first script on; without the option, the browser's own.
import { chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { createSession, endSession, headless, startPageServer, type PageServer } from './test-support.js';

/** The WebGL renderer a page's first script sees (read before anything else runs). */
async function renderer(page: Page): Promise<string> {
  return page.evaluate(() => {
    const gl = document.createElement('canvas').getContext('webgl');
    if (!gl) return 'no webgl';
    gl.getExtension('WEBGL_debug_renderer_info');
    return String(gl.getParameter(0x9246)); // UNMASKED_RENDERER_WEBGL
  });
}

describe('browser.extra_stealth', () => {
  let server: TestServer;
  let pages: PageServer;
  beforeAll(async () => {
    server = await startTestServer();
    pages = await startPageServer();
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  it("hardens every page the session opens, the client's own contexts and frames included; off, the browser is as it is", async () => {
    const plain = await createSession(server, headless({}));
    const hardened = await createSession(server, { ...headless({}), browser: { headless: { active: true }, extra_stealth: { active: true } } });
    const plainBrowser = await chromium.connectOverCDP(plain.cdp_url);
    const browser = await chromium.connectOverCDP(hardened.cdp_url);
    try {
      const before = plainBrowser.contexts()[0]!.pages()[0]!;
      await before.goto(pages.url('/'));
      expect(await renderer(before)).toMatch(/SwiftShader/i);

      const first = browser.contexts()[0]!.pages()[0]!;
      await first.goto(pages.url('/'));
      expect(await renderer(first)).toMatch(/^ANGLE \(Intel/);
      expect(await first.evaluate(() => navigator.webdriver)).toBe(false);
      // The patched function still looks native.
      expect(await first.evaluate(() => WebGLRenderingContext.prototype.getParameter.toString())).toBe('function getParameter() { [native code] }');

      const context = await browser.newContext();
      const other = await context.newPage();
      await other.goto(pages.url('/second'));
      expect(await renderer(other)).toMatch(/^ANGLE \(Intel/);
      await other.setContent(`<iframe src="${pages.url('/')}"></iframe>`);
      const frame = await (await other.waitForSelector('iframe')).contentFrame();
      await frame!.waitForLoadState();
      expect(
        await frame!.evaluate(() => {
          const gl = document.createElement('canvas').getContext('webgl')!;
          gl.getExtension('WEBGL_debug_renderer_info');
          return String(gl.getParameter(0x9246));
        }),
      ).toMatch(/^ANGLE \(Intel/);
      await context.close();
    } finally {
      await plainBrowser.close();
      await browser.close();
      await endSession(server, plain.id);
      await endSession(server, hardened.id);
    }
  });
});
