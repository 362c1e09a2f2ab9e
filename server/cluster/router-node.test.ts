// A node without browsers (MAX_CONCURRENT_BROWSERS=0): it answers the API, and what needs a
// browser goes to a node that runs them: a new session is placed there and driven over CDP
// through the router, the browser tools render there; with no room left anywhere the router
// answers 503, never a browser of its own. Real processes on one PostgreSQL schema.
// Needs DATABASE_URL (a cluster needs PostgreSQL); skipped with a printed reason without it.
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { browsersDirFor } from '../browser/roots.js';
import { processesUnder } from '../sessions/test-support.js';
import { startTestCluster, NODE_SESSION, type TestCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/router-node.test.ts skipped: several nodes need PostgreSQL, and DATABASE_URL is not set');

describe.skipIf(!databaseUrl)('a node without browsers', () => {
  let cluster: TestCluster;
  let site: FixtureServer;
  beforeAll(async () => {
    site = await startFixtureServer();
    // node-a routes (no browser, no Chromium needed); node-b has room for one session.
    cluster = await startTestCluster({
      databaseUrl: databaseUrl!,
      count: 2,
      nodeEnv: (i): Record<string, string> =>
        i === 0 ? { MAX_CONCURRENT_BROWSERS: '0', CHROMIUM_PATH: '/nonexistent/chromium' } : { MAX_CONCURRENT_BROWSERS: '1' },
    });
  }, 60_000);
  afterAll(async () => {
    await cluster?.close();
    await site?.close();
  });

  const router = () => cluster.nodes[0];
  const post = (path: string, body: unknown) =>
    router().request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('places sessions and renders tools on a node with browsers; with no room, answers 503', { timeout: 60_000 }, async () => {
    const [a, b] = cluster.nodes;

    // A tool asked of the router renders on node-b.
    const shot = await post('/v1/tools/screenshot', { url: `${site.url}/site/form.html`, width: 320, height: 200 });
    expect(shot.status).toBe(200);
    expect(shot.headers.get('content-type')).toBe('image/png');

    // A session asked of the router runs on node-b, and is driven through the router.
    const created = await post('/v1/sessions', NODE_SESSION);
    expect(created.status).toBe(200);
    const session = ((await created.json()) as { data: { id: string; cdp_url: string } }).data;
    const owner = await cluster.nodes[1].request(`/v1/sessions/${session.id}`);
    expect(owner.status).toBe(200);
    const viaRouter = new URL(session.cdp_url);
    viaRouter.host = new URL(a.url).host;
    const browser = await chromium.connectOverCDP(viaRouter.toString());
    try {
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      await page.goto(`${site.url}/site/form.html`);
      expect(await page.title()).not.toBe('');
    } finally {
      await browser.close();
    }

    // node-b is full: the router has nowhere to send a new session or a tool, and says so.
    for (const [path, body] of [
      ['/v1/sessions', NODE_SESSION],
      ['/v1/tools/screenshot', { url: `${site.url}/site/form.html` }],
    ] as const) {
      const full = await post(path, body);
      expect(full.status).toBe(503);
      expect(full.headers.get('retry-after')).toBe('5');
      expect(((await full.json()) as { error: { message: string } }).error.message).toMatch(/MAX_CONCURRENT_BROWSERS=0/);
    }

    // Through all of it the router launched nothing.
    expect(processesUnder(browsersDirFor(a.dataDir))).toEqual([]);
    expect((await b.request(`/v1/sessions/${session.id}`, { method: 'DELETE' })).status).toBe(200);
  });
});
