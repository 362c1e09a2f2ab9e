// What /mcp offers beside tools, through the SDK's client (and raw HTTP where the client
// hides it) against the real server and real Chromium: resources (a session's page snapshot,
// screenshot, live view and recordings) and their list-changed notification, progress
// notifications on long tools, and a broken SSE stream resumed with Last-Event-ID.
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpError, ResourceListChangedNotificationSchema, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, eventually, processesUnder } from '../sessions/test-support.js';
import { startMcpPages, type McpPages } from './test-pages.js';
import { connectMcp, startedId, type Connected } from './test-support.js';

const HEADLESS = { headless: true, recording: false };

describe.each(browserBackends)('MCP resources, progress and resumable streams on %s', (backend) => {
  let server: TestServer;
  let pages: McpPages;
  const clients: Connected[] = [];

  beforeAll(async () => {
    server = await startTestServer({ backend });
    pages = await startMcpPages();
  });
  afterAll(async () => {
    for (const c of clients) {
      await c.transport.terminateSession().catch(() => {});
      await c.client.close().catch(() => {});
    }
    await server?.close();
    await pages?.close();
    if (server) expect(processesUnder(browsersDirFor(server.dataDir))).toEqual([]);
  });
  const connect = async (key = server.apiKey, through?: FetchLike) => {
    const c = await connectMcp(server.url, { 'service-api-key': key }, through);
    clients.push(c);
    return c;
  };

  it("lists a running session's resources and reads its snapshot, screenshot, live view and recordings", async () => {
    const mcp = await connect();
    const id = startedId(await mcp.ok('session_start', HEADLESS));
    await mcp.ok('anchor_navigate', { url: pages.url('/widgets') });

    expect(mcp.client.getServerCapabilities()?.resources?.listChanged).toBe(true);
    const { resources } = await mcp.client.listResources();
    const uris = resources.map((r) => r.uri);
    for (const what of ['snapshot', 'screenshot', 'live-view', 'recording']) expect(uris).toContain(`browser-session://${id}/${what}`);

    const snapshot = await mcp.client.readResource({ uri: `browser-session://${id}/snapshot` });
    const text = snapshot.contents[0] && 'text' in snapshot.contents[0] ? snapshot.contents[0].text : '';
    expect(text).toContain('Page title: Widgets');
    expect(text).toMatch(/button "Ask" \[ref=\w+\]/);

    const shot = (await mcp.client.readResource({ uri: `browser-session://${id}/screenshot` })).contents[0];
    expect(shot?.mimeType).toBe('image/png');
    expect(shot && 'blob' in shot && Buffer.from(shot.blob, 'base64').subarray(1, 4).toString()).toBe('PNG');

    const live = (await mcp.client.readResource({ uri: `browser-session://${id}/live-view` })).contents[0];
    expect(live && 'text' in live && live.text).toContain(`/live/${id}?token=`);

    const recording = (await mcp.client.readResource({ uri: `browser-session://${id}/recording` })).contents[0];
    const body = JSON.parse(recording && 'text' in recording ? recording.text : '{}');
    expect(body).toMatchObject({ count: 0, items: [] });
    expect(body.note).toMatch(/encoded when its session ends/);
  });

  it("refuses another project's session resources as not found", async () => {
    const mcp = await connect();
    const id = startedId(await mcp.ok('session_start', HEADLESS));
    const other = await createProject(server.db, { name: 'other', source: 'test' });
    const stranger = await connect(other.key);
    expect((await stranger.client.listResources()).resources.map((r) => r.uri).join()).not.toContain(id);
    for (const what of ['snapshot', 'live-view', 'recording']) {
      const err = await stranger.client.readResource({ uri: `browser-session://${id}/${what}` }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).code).toBe(-32002);
    }
  });

  it('tells the client when the resource list changes: a browser session started or ended', async () => {
    let streaming = false;
    const watcher = await connect(server.apiKey, async (url, init) => {
      const res = await fetch(url, init);
      if (init?.method === 'GET' && res.ok) streaming = true;
      return res;
    });
    let changes = 0;
    watcher.client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
      changes++;
    });
    // The SDK's client opens its GET stream, where unrelated notifications come, after
    // initialize: until the server has answered it (it holds the stream by then).
    await eventually(() => streaming, 10_000, "the watcher's GET stream");
    const actor = await connect();
    const id = startedId(await actor.ok('session_start', HEADLESS));
    await eventually(() => changes >= 1, 10_000, 'a list_changed notification for the start');
    await actor.ok('session_end', { session_id: id });
    await eventually(() => changes >= 2, 10_000, 'a list_changed notification for the end');
  });

  it('sends progress notifications on long tools when the client asks for them', async () => {
    const mcp = await connect();
    const started: Progress[] = [];
    await mcp.client.callTool({ name: 'session_start', arguments: HEADLESS }, undefined, { onprogress: (p) => started.push(p) });
    expect(started.map((p) => p.message)).toContain('Starting a cloud browser');

    const loading: Progress[] = [];
    const r = await mcp.client.callTool({ name: 'anchor_navigate', arguments: { url: pages.url('/slow') } }, undefined, { onprogress: (p) => loading.push(p) });
    expect(r.isError).toBeFalsy();
    const messages = loading.map((p) => p.message ?? '');
    expect(messages[0]).toBe(`Loading ${pages.url('/slow')}`);
    // The page answers after 2.6 s: a beat meanwhile, then its response and its load.
    expect(messages.some((m) => /^Still working \(\d+ s\)$/.test(m))).toBe(true);
    expect(messages).toContain(`Response received from ${pages.url('/slow')}; loading the page`);
    // Progress grows with each notification.
    expect(loading.map((p) => p.progress)).toEqual(loading.map((_, i) => i + 1));
  });

  it('resumes a broken tool-call stream with Last-Event-ID, the answer included', async () => {
    const mcp = await connect();
    await mcp.ok('session_start', HEADLESS);
    const headers = {
      'service-api-key': server.apiKey,
      'mcp-session-id': mcp.transport.sessionId!,
      'mcp-protocol-version': mcp.transport.protocolVersion ?? '2025-11-25',
      accept: 'application/json, text/event-stream',
    };
    const aborted = new AbortController();
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'anchor_wait_for', arguments: { time: 1.5 } } }),
      signal: aborted.signal,
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    // The first event primes the stream with an id; then the connection breaks.
    const reader = res.body!.getReader();
    let head = '';
    while (!/\n\n/.test(head)) head += new TextDecoder().decode((await reader.read()).value);
    const primed = /^id: (\S+)$/m.exec(head)?.[1];
    expect(primed).toBeTruthy();
    aborted.abort();

    // As a client reconnecting with backoff: the server may not have seen the break yet (409).
    let resumed!: Response;
    await eventually(
      async () => {
        resumed = await fetch(`${server.url}/mcp`, { headers: { ...headers, 'last-event-id': primed! } });
        if (resumed.status === 409) await resumed.body?.cancel();
        return resumed.status !== 409;
      },
      10_000,
      'the server to let the stream be resumed',
    );
    expect(resumed.status).toBe(200);
    const events = resumed.body!.pipeThrough(new TextDecoderStream()).getReader();
    let stream = '';
    while (!/"id":77/.test(stream)) {
      const { value, done } = await events.read();
      if (done) break;
      stream += value;
    }
    await events.cancel();
    const answer = JSON.parse(/^data: (.*"id":77.*)$/m.exec(stream)![1]);
    expect(answer.result.content[0].text).toBe('Done waiting.');

    // An id the store does not hold is refused.
    const unknown = await fetch(`${server.url}/mcp`, { headers: { ...headers, 'last-event-id': '999999' } });
    expect(unknown.status).toBe(400);
    await unknown.body?.cancel();
  });
});
