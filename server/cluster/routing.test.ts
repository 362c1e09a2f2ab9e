// Any node serves any session, over real processes: three nodes on one PostgreSQL schema
// behind a round-robin front, sessions created through node A and driven through node B
// (CDP) and node C (live view), every session operation through a node that does not own
// the browser, placement on another node when A is full, and a forged cluster proof refused.
// Then a remembered owner that moved: A restarts on another port, and B, which remembers A's
// old address for a session, finds it again rather than answering 502. Last, a key sent only
// in the vendor clients' anchor-api-key header, through nodes that do not own its session.
import { chromium } from 'playwright-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startFixtureServer, fixtureBinary, type FixtureServer } from '../../fixtures/server.js';
import { eventually, tryWebSocket } from '../sessions/test-support.js';
import { MISDIRECTED_HEADER } from './forward.js';
import { HOP_HEADER, PROOF_HEADER, proofHeaders, TARGET_HEADER } from './proof.js';
import { startTestCluster, TEST_CLUSTER_SECRET, type TestCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/routing.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');

const HEADLESS = { browser: { headless: { active: true } } };

describe.skipIf(!databaseUrl)('three nodes behind a round-robin front', () => {
  let cluster: TestCluster;
  let site: FixtureServer;
  let db: pg.Client;
  const node = (i: number) => cluster.nodes[i];
  /** Where a session's browser runs, from the database. */
  const nodeOf = async (id: string) => (await db.query<{ node_id: string }>('SELECT node_id FROM sessions WHERE id = $1', [id])).rows[0]?.node_id;
  const create = async (i: number, body: object) => {
    const res = await node(i).request('/v1/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as { data: { id: string; cdp_url: string; live_view_url: string }; error?: { message: string } } };
  };
  /** A URL the front handed out, sent to node i instead. */
  const via = (i: number, publicUrl: string) => publicUrl.replace(cluster.front.url.replace(/^http/, ''), node(i).url.replace(/^http/, ''));

  beforeAll(async () => {
    site = await startFixtureServer();
    // One browser a node: A is full with one session, and the cluster with three. No node
    // dies here: a long NODE_DEAD_AFTER_SECONDS makes a remembered owner trusted for a minute
    // (a heartbeat period), longer than the last test's restart takes.
    cluster = await startTestCluster({ databaseUrl: databaseUrl!, count: 3, env: { MAX_CONCURRENT_BROWSERS: '1', NODE_DEAD_AFTER_SECONDS: '300' } });
    db = new pg.Client({ connectionString: cluster.databaseUrl });
    await db.connect();
  }, 240_000);
  afterAll(async () => {
    await db?.end();
    await cluster?.close();
    await site?.close();
  }, 60_000);

  let main: { id: string; cdp_url: string; live_view_url: string };

  it("reports the cluster's browsers as a project's concurrent-browser limit, from any node", async () => {
    // MAX_CONCURRENT_BROWSERS is 1 a node; placement lets a project without a cap of its own use all three.
    for (const i of [0, 1, 2]) {
      const res = await node(i).request('/v1/billing');
      expect(res.status).toBe(200);
      expect(((await res.json()) as { data: { max_concurrent_browsers: number } }).data.max_concurrent_browsers).toBe(3);
    }
  });

  it('places a session on another node when A is full, and answers 429 only when every node is', async () => {
    const first = await create(0, { ...HEADLESS, session: { recording: { active: true } } });
    expect(first.status).toBe(200);
    main = first.body.data;
    expect(await nodeOf(main.id)).toBe('node-a');
    // The public addresses are the front's, whichever node answered.
    expect(main.cdp_url.startsWith(cluster.front.url.replace(/^http/, 'ws'))).toBe(true);
    expect(main.live_view_url.startsWith(cluster.front.url)).toBe(true);

    const second = await create(0, { ...HEADLESS, session: { recording: { active: false } } });
    expect(second.status).toBe(200);
    const third = await create(0, { ...HEADLESS, session: { recording: { active: false } } });
    expect(third.status).toBe(200);
    expect(new Set([await nodeOf(second.body.data.id), await nodeOf(third.body.data.id)])).toEqual(new Set(['node-b', 'node-c']));

    const full = await create(0, HEADLESS);
    expect(full.status).toBe(429);
    expect(full.body.error!.message).toMatch(/limit/i);

    // Ended through A, which owns neither: their nodes close their browsers.
    for (const s of [second, third]) expect((await node(0).request(`/v1/sessions/${s.body.data.id}`, { method: 'DELETE' })).status).toBe(200);
    // Room again: B or C takes the next one.
    await eventually(
      async () => (await create(0, { ...HEADLESS, session: { recording: { active: false } } })).status === 200,
      20_000,
      'a session placed again',
    );
    const ended = await node(1).request('/v1/sessions/all', { method: 'DELETE' });
    expect(ended.status).toBe(200);
    // The placed one ended on its node; main (on A, from B) too: both counted.
    const body = (await ended.json()) as { data: { ended: number } };
    expect(body.data.ended).toBe(2);
    const statuses = await db.query<{ status: string }>("SELECT status FROM sessions WHERE status IN ('starting', 'running')");
    expect(statuses.rows).toEqual([]);
    main = (await create(0, { ...HEADLESS, session: { recording: { active: true } } })).body.data;
    expect(await nodeOf(main.id)).toBe('node-a');
  }, 120_000);

  it('drives a session created through A over CDP through B', async () => {
    const browser = await chromium.connectOverCDP(via(1, main.cdp_url));
    try {
      const page = browser.contexts()[0].pages()[0] ?? (await browser.contexts()[0].newPage());
      await page.goto(`${site.url}/site/form.html`).catch(() => page.goto('about:blank'));
      expect(await page.evaluate(() => 6 * 7)).toBe(42);
    } finally {
      await browser.close().catch(() => {});
    }
    // Through the front too (it spreads the upgrades over the nodes).
    const again = await chromium.connectOverCDP(main.cdp_url);
    expect(
      await again
        .contexts()[0]
        .pages()[0]
        .evaluate(() => document.readyState),
    ).toBeTruthy();
    // Playwright's close() of a connected browser only disconnects.
    await again.close();
    expect(
      (
        await node(0)
          .request(`/v1/sessions/${main.id}`)
          .then((r) => r.json())
      ).data.status,
    ).toBe('running');
  }, 60_000);

  it("serves the vendor SDK's CDP address through B: its discovery document (http form) and its WebSocket (ws form)", async () => {
    const query = `?apiKey=${cluster.apiKey}&sessionId=${main.id}`;
    // The document is answered by the owner, A, and names a URL that works through any node.
    const doc = (await (await fetch(`${node(1).url}/json/version/${query}`)).json()) as { webSocketDebuggerUrl: string };
    expect(doc.webSocketDebuggerUrl).toBe(main.cdp_url);
    for (const address of [`${node(1).url}${query}`, `${node(1).url.replace(/^http/, 'ws')}/${query}`]) {
      const browser = await chromium.connectOverCDP(address);
      try {
        expect(
          await browser
            .contexts()[0]
            .pages()[0]
            .evaluate(() => 6 * 7),
        ).toBe(42);
      } finally {
        await browser.close().catch(() => {});
      }
    }
    expect((await fetch(`${node(2).url}/json/version?apiKey=sk_wrong&sessionId=${main.id}`)).status).toBe(401);
  }, 60_000);

  it('serves the live view through C: its page and its WebSocket', async () => {
    const page = await fetch(via(2, main.live_view_url));
    expect(page.status).toBe(200);
    const html = await page.text();
    const ws = /\/live\/[^"'\s]+\/ws\?ticket=[^"'\s&]+/.exec(html)?.[0];
    expect(ws).toBeTruthy();
    const socket = new WebSocket(node(2).url.replace(/^http/, 'ws') + ws!.replace(/&amp;/g, '&'));
    const hello = await new Promise<{ type: string; sessionId: string }>((resolve, reject) => {
      socket.once('message', (data) => resolve(JSON.parse(data.toString())));
      socket.once('error', reject);
    });
    socket.close();
    expect(hello).toMatchObject({ type: 'hello', sessionId: main.id });
  }, 30_000);

  it('answers every session operation through a node that does not own the browser', async () => {
    const B = node(1);
    const C = node(2);
    const json = (r: Response) => r.json() as Promise<any>;
    const post = (n: typeof B, path: string, body?: object) =>
      n.request(`/v1/sessions/${main.id}/${path}`, {
        method: 'POST',
        ...(body ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      });

    expect((await post(B, 'goto', { url: `${site.url}/site/form.html` })).status).toBe(200);
    expect((await post(C, 'mouse/click', { x: 10, y: 10, button: 'left' })).status).toBe(200);
    expect((await post(B, 'keyboard/type', { text: 'hi' })).status).toBe(200);
    const shot = await C.request(`/v1/sessions/${main.id}/screenshot`);
    expect(shot.status).toBe(200);
    expect(shot.headers.get('content-type')).toBe('image/png');
    expect((await shot.arrayBuffer()).byteLength).toBeGreaterThan(100);
    const pages = await json(await B.request(`/v1/sessions/${main.id}/pages`));
    expect(pages.data.length).toBeGreaterThan(0);

    // An upload streamed through C reaches the owner's browser root.
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(fixtureBinary)]), 'cluster.bin');
    const up = await C.request(`/v1/sessions/${main.id}/uploads`, { method: 'POST', body: form });
    expect(up.status).toBe(200);
    expect(JSON.stringify(await json(up))).toMatch(/cluster\.bin/);
    // A large one (over the 1 MiB a node keeps to send again) through C, which remembers the
    // owner by now: streamed whole, after a fresh lookup.
    const large = Buffer.alloc(3 * 1024 * 1024, 7);
    const bigForm = new FormData();
    bigForm.set('file', new Blob([new Uint8Array(large)]), 'large.bin');
    const bigUp = await C.request(`/v1/sessions/${main.id}/uploads`, { method: 'POST', body: bigForm });
    expect(bigUp.status).toBe(200);
    expect(JSON.stringify(await json(bigUp))).toContain(`"size":${large.length}`);

    // A download the owner's browser made, listed through B and streamed through C.
    expect((await post(B, 'goto', { url: `${site.url}/files/archive.bin` })).status).toBeLessThan(500);
    let items: { id: string }[] = [];
    await eventually(
      async () => (items = (await json(await B.request(`/v1/sessions/${main.id}/downloads`))).data.items).length > 0,
      15_000,
      'the download listed',
    );
    const file = await C.request(`/v1/sessions/${main.id}/downloads/${items[0].id}`);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).equals(fixtureBinary)).toBe(true);

    expect(await json(await post(B, 'recordings/pause'))).toEqual({ data: { status: 'paused' } });
    expect(await json(await post(C, 'recordings/resume'))).toEqual({ data: { status: 'recording' } });

    // The end through C closes the browser on A: its cdp_url no longer connects, anywhere.
    const end = await C.request(`/v1/sessions/${main.id}`, { method: 'DELETE' });
    expect(await json(end)).toEqual({ data: { status: 'completed' } });
    expect(await tryWebSocket(via(1, main.cdp_url))).not.toBe('open');

    // The recording A made, listed through B and fetched through C (A's disk).
    let listed: any;
    await eventually(async () => (listed = await json(await B.request(`/v1/sessions/${main.id}/recordings`))).data?.count > 0, 60_000, 'the recording listed');
    const video = await C.request(`/v1/sessions/${main.id}/recordings/primary/fetch`);
    expect(video.status).toBe(200);
    expect(video.headers.get('content-type')).toBe('video/mp4');
    const bytes = Buffer.from(await video.arrayBuffer());
    expect(bytes.subarray(4, 8).toString()).toBe('ftyp');
    // Its signed link works through any node (the front, round robin).
    for (let i = 0; i < 3; i++) expect((await fetch(listed.data.items[0].file_link)).status).toBe(200);
  }, 120_000);

  it('serves an MCP session opened on A through B and C (its Mcp-Session-Id names A in the database)', async () => {
    const rpc = (i: number, body: object, sessionId?: string) =>
      node(i).request('/mcp', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
          ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
        },
        body: JSON.stringify(body),
      });
    const init = await rpc(0, {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    expect(init.status).toBe(200);
    await init.text();
    const id = init.headers.get('mcp-session-id')!;
    expect(id).toBeTruthy();
    expect((await db.query('SELECT node_id FROM mcp_sessions WHERE id = $1', [id])).rows).toEqual([{ node_id: 'node-a' }]);
    expect((await rpc(1, { jsonrpc: '2.0', method: 'notifications/initialized' }, id)).status).toBe(202);
    const tools = await rpc(2, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, id);
    expect(tools.status).toBe(200);
    expect(await tools.text()).toContain('session_start');
    const closed = await node(1).request('/mcp', { method: 'DELETE', headers: { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' } });
    expect(closed.status).toBe(200);
    expect((await db.query('SELECT node_id FROM mcp_sessions WHERE id = $1', [id])).rows).toEqual([]);
  }, 30_000);

  it('refuses a forged or replayed cluster proof with 401, over HTTP and for an upgrade', async () => {
    const B = node(1);
    const path = `/v1/sessions/${main.id}/pages`;
    const forged = await B.request(path, { headers: { [HOP_HEADER]: 'node-a', [PROOF_HEADER]: `t=${Math.floor(Date.now() / 1000)},sig=${'0'.repeat(64)}` } });
    expect(forged.status).toBe(401);
    expect(await forged.json()).toEqual({ error: { code: 401, message: expect.stringMatching(/invalid cluster proof/) } });
    // A hop marker without its proof.
    expect((await B.request(path, { headers: { [HOP_HEADER]: 'node-a' } })).status).toBe(401);
    // A real proof for another path, or signed by a wrong secret, or too old.
    expect((await B.request(path, { headers: proofHeaders(TEST_CLUSTER_SECRET, 'node-a', 'GET', '/v1/sessions') })).status).toBe(401);
    expect((await B.request(path, { headers: proofHeaders('x'.repeat(40), 'node-a', 'GET', path) })).status).toBe(401);
    expect((await B.request(path, { headers: proofHeaders(TEST_CLUSTER_SECRET, 'node-a', 'GET', path, Date.now() - 120_000) })).status).toBe(401);
    // The real thing is answered where it lands (never forwarded again): the session has ended, its pages are gone.
    expect((await B.request(path, { headers: proofHeaders(TEST_CLUSTER_SECRET, 'node-a', 'GET', path) })).status).not.toBe(401);
    // An upgrade with a forged proof.
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${B.url.replace(/^http/, 'ws')}/v1/cdp/${main.id}`, {
        headers: { [HOP_HEADER]: 'node-a', [PROOF_HEADER]: 't=1,sig=' + 'a'.repeat(64) },
      });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('error', () => resolve(-1));
    });
    expect(refused).toBe(401);
    // A proof that holds, for a request meant for another node (a remembered address that
    // another node now answers at): 421, so that the forwarder looks again.
    const misdirected = await B.request(path, { headers: { ...proofHeaders(TEST_CLUSTER_SECRET, 'node-a', 'GET', path), [TARGET_HEADER]: 'node-c' } });
    expect(misdirected.status).toBe(421);
    expect(misdirected.headers.get(MISDIRECTED_HEADER)).toBe('node-b');
    const meantUpgrade = await new Promise<number>((resolve) => {
      const cdp = `/v1/cdp/${main.id}`;
      const ws = new WebSocket(`${B.url.replace(/^http/, 'ws')}${cdp}`, {
        headers: { ...proofHeaders(TEST_CLUSTER_SECRET, 'node-a', 'GET', cdp), [TARGET_HEADER]: 'node-c' },
      });
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('error', () => resolve(-1));
    });
    expect(meantUpgrade).toBe(421);
  });

  it('finds a remembered owner again when it moved: A restarts on another port, B forwards there, not into the void', async () => {
    const B = node(1);
    const onA = `ws${node(0).url.slice(4)}`;
    const direct = () => main.cdp_url.replace(cluster.front.url.replace(/^http/, 'ws'), `ws${node(0).url.slice(4)}`);
    // An upgrade through B: B asks the database where main (ended, on A) is, and remembers A's address.
    const refusedByA = await tryWebSocket(direct());
    expect(refusedByA).not.toBe('open');
    expect(await tryWebSocket(via(1, main.cdp_url))).toBe(refusedByA);
    await cluster.restart(0);
    expect(`ws${node(0).url.slice(4)}`).not.toBe(onA);
    // The address B remembers refuses connections now: B looks again, once, and finds A's new
    // one, which answers as A did (not B's 502 for an owner it cannot reach).
    expect(await tryWebSocket(via(1, main.cdp_url))).toBe(refusedByA);

    // A request: B remembers A's new address, A moves again.
    const recordings = `/v1/sessions/${main.id}/recordings`;
    const before = await B.request(recordings);
    expect(before.status).toBe(200);
    const listed = ((await before.json()) as { data: { count: number } }).data.count;
    await cluster.restart(0);
    const after = await B.request(recordings);
    expect(after.status).toBe(200);
    expect(((await after.json()) as { data: { count: number } }).data.count).toBe(listed);
  }, 180_000);

  it("authenticates a key sent only in anchor-api-key (the vendor clients' header) on a node that does not own the session", async () => {
    const vendor = (i: number, path: string, init: RequestInit = {}, key = cluster.apiKey) =>
      fetch(node(i).url + path, { ...init, headers: { 'anchor-api-key': key, ...(init.headers as Record<string, string>) } });
    const created = await vendor(0, '/v1/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...HEADLESS, session: { recording: { active: false } } }),
    });
    expect(created.status).toBe(200);
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    const owner = await nodeOf(id);
    const others = [0, 1, 2].filter((i) => node(i).id !== owner);
    expect(others).toHaveLength(2);
    // Forwarded with the client's headers; the owner reads the key from the alias.
    for (const i of others) {
      const pages = await vendor(i, `/v1/sessions/${id}/pages`);
      expect(pages.status).toBe(200);
      expect(((await pages.json()) as { data: unknown[] }).data.length).toBeGreaterThan(0);
      expect((await vendor(i, `/v1/sessions/${id}/pages`, {}, 'sk_wrong_vendor_key')).status).toBe(401);
    }
    // Ending every session through a node that owns none: the owner is sent the key too.
    const ended = await vendor(others[0], '/v1/sessions/all', { method: 'DELETE' });
    expect(await ended.json()).toEqual({ data: { status: 'completed', ended: 1 } });
    expect(await db.query("SELECT id FROM sessions WHERE status IN ('starting', 'running')").then((r) => r.rows)).toEqual([]);
  }, 60_000);
});
