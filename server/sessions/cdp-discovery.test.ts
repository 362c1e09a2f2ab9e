// The vendor SDK's CDP address in its http form, `http://HOST?apiKey=K&sessionId=S`: the
// DevTools discovery document Playwright reads first (`/json/version/`), then the WebSocket it
// names. Authenticated and scoped to the key's project as the ws form is.
import { randomUUID } from 'node:crypto';
import { chromium } from 'playwright-core';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { HEADLESS, createSession, endSession, startPageServer, type PageServer } from './test-support.js';

describe("the vendor SDK's CDP address over http (DevTools discovery)", () => {
  let server: TestServer;
  let pages: PageServer;
  let otherKey: string;
  const address = (key: string, id: string, slash = '') => `${server.url}${slash}?apiKey=${encodeURIComponent(key)}&sessionId=${id}`;

  beforeAll(async () => {
    server = await startTestServer();
    pages = await startPageServer();
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    otherKey = other.key!;
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  it('Playwright connectOverCDP on http://HOST?apiKey&sessionId (with and without the slash) drives the session; /json/version names its cdp_url', async () => {
    const { id, cdp_url } = await createSession(server, HEADLESS);
    try {
      for (const path of ['/json/version', '/json/version/']) {
        const res = await fetch(`${server.url}${path}?apiKey=${server.apiKey}&sessionId=${id}`);
        expect(res.status, path).toBe(200);
        expect(await res.json()).toMatchObject({ Browser: expect.stringMatching(/Chrome\/\d+/), webSocketDebuggerUrl: cdp_url });
      }
      for (const slash of ['', '/']) {
        const browser = await chromium.connectOverCDP(address(server.apiKey, id, slash));
        try {
          const page = browser.contexts()[0]!.pages()[0]!;
          await page.goto(pages.url('/'));
          expect(await page.title()).toBe('Home');
        } finally {
          await browser.close();
        }
      }
    } finally {
      await endSession(server, id);
    }
  });

  it("refuses a wrong key (401), another project's session and an ended one (404), a missing parameter (400)", async () => {
    const { id } = await createSession(server, HEADLESS);
    const version = (query: string) => fetch(`${server.url}/json/version/?${query}`);
    try {
      const wrong = await version(`apiKey=sk_wrong&sessionId=${id}`);
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toEqual({ error: { code: 401, message: 'Invalid API key' } });
      await expect(chromium.connectOverCDP(address('sk_wrong', id), { timeout: 10_000 })).rejects.toThrow(/Unexpected status 401/);
      // A key of another project does not learn that the session exists.
      const foreign = await version(`apiKey=${otherKey}&sessionId=${id}`);
      expect(foreign.status).toBe(404);
      expect(await foreign.json()).toEqual({ error: { code: 404, message: 'Session not found or ended' } });
      expect((await version(`apiKey=${server.apiKey}&sessionId=${randomUUID()}`)).status).toBe(404);
      expect((await version(`apiKey=${server.apiKey}`)).status).toBe(400);
      expect((await version(`sessionId=${id}`)).status).toBe(400);
    } finally {
      await endSession(server, id);
    }
    expect((await version(`apiKey=${server.apiKey}&sessionId=${id}`)).status).toBe(404);
  });

  it('Puppeteer connects with the ws form or the discovered URL; its browserURL drops the query, so that form is refused (400), not guessed', async () => {
    const { id } = await createSession(server, HEADLESS);
    try {
      const doc = (await (await fetch(`${server.url}/json/version?apiKey=${server.apiKey}&sessionId=${id}`)).json()) as { webSocketDebuggerUrl: string };
      for (const endpoint of [doc.webSocketDebuggerUrl, address(server.apiKey, id).replace(/^http/, 'ws')]) {
        const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null });
        try {
          const [page] = await browser.pages();
          await page!.goto(pages.url('/second'));
          expect(await page!.title()).toBe('Second');
        } finally {
          await browser.disconnect();
        }
      }
      // puppeteer-core resolves '/json/version' against browserURL: the key and the session are lost.
      await expect(puppeteer.connect({ browserURL: address(server.apiKey, id) })).rejects.toThrow(/json\/version: HTTP Bad Request/);
    } finally {
      await endSession(server, id);
    }
  });
});
