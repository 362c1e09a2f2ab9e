// The MCP server at /mcp, driven by the official SDK's client over real HTTP against the
// real server and real Chromium: tools listed with their schemas, a browser session started,
// a fixture form read (snapshot), filled and submitted by refs, a screenshot, the session
// ended; authentication (either key header, Bearer, none, another project's key); and the
// ends of an MCP session (DELETE, a client that disappears) leaving no browser behind.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, eventually, gone, processesUnder, rootOf, sessionRow, startPageServer, type PageServer } from '../sessions/test-support.js';
import { refOf, startedId, textOf } from './test-support.js';

/** The hosted vendor's tool names this server serves (a user switching keeps their prompts). */
const VENDOR_TOOLS = [
  'anchor_navigate',
  'anchor_navigate_back',
  'anchor_navigate_forward',
  'anchor_snapshot',
  'anchor_take_screenshot',
  'anchor_click',
  'anchor_hover',
  'anchor_drag',
  'anchor_select_option',
  'browser_type',
  'anchor_press_key',
  'browser_evaluate',
  'anchor_wait_for',
  'anchor_handle_dialog',
  'anchor_file_upload',
  'anchor_console_messages',
  'anchor_network_requests',
  'anchor_resize',
  'anchor_close',
  'anchor_tab_list',
  'anchor_tab_new',
  'anchor_tab_select',
  'anchor_tab_close',
  'anchor_pdf_save',
  'browser_mouse_click_xy',
  'browser_mouse_drag_xy',
  'browser_mouse_move_xy',
];
const IDLE_SECONDS = 3;
const HEADLESS = { headless: true, recording: false };

describe.each(browserBackends)('MCP server on %s', (backend) => {
  let server: TestServer;
  let pages: PageServer;
  let browsersDir: string;
  const clients: Client[] = [];

  beforeAll(async () => {
    server = await startTestServer({ backend, env: { MCP_IDLE_TIMEOUT_SECONDS: String(IDLE_SECONDS) } });
    pages = await startPageServer();
    browsersDir = browsersDirFor(server.dataDir);
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await server?.close();
    await pages?.close();
    // The server's shutdown closed every MCP session and the browsers they started.
    if (browsersDir) expect(processesUnder(browsersDir)).toEqual([]);
  });

  const connect = async (headers: Record<string, string> = { 'service-api-key': server.apiKey }) => {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers } });
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  };
  const call = (client: Client, name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  const started = (r: CallToolResult) => startedId(textOf(r));

  it('refuses a request without a key, or with a wrong one, with 401 and WWW-Authenticate', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(init),
      });
    for (const headers of [{}, { 'service-api-key': 'sk_wrong' }, { 'anchor-api-key': 'sk_wrong' }, { authorization: 'Bearer sk_wrong' }] as Record<
      string,
      string
    >[]) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
    }
    // A header key comes before a Bearer token, service-api-key before anchor-api-key.
    const refused = await post({ 'service-api-key': 'sk_wrong', 'anchor-api-key': server.apiKey, authorization: `Bearer ${server.apiKey}` });
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ error: { code: 401, message: 'Invalid API key (read from the service-api-key header)' } });
    await expect(connect({})).rejects.toThrow();
  });

  it("accepts the key in anchor-api-key, the vendor clients' header", async () => {
    const { client } = await connect({ 'anchor-api-key': server.apiKey });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('session_start');
  });

  it('lists its tools, each with an object input schema and a description', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of [
      ...VENDOR_TOOLS,
      'session_start',
      'session_list',
      'session_end',
      'session_live_view',
      'web_fetch',
      'screenshot_webpage',
      'pdf_webpage',
    ]) {
      expect(names).toContain(name);
    }
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.description?.length).toBeGreaterThan(10);
    }
  });

  it('starts a browser session, reads a form, fills and submits it by refs, takes a screenshot and ends it', async () => {
    const { client } = await connect({ authorization: `Bearer ${server.apiKey}` });
    const id = started(await call(client, 'session_start', HEADLESS));
    expect((await sessionRow(server.db, id))?.status).toBe('running');
    const root = rootOf(browsersDir, id);

    const nav = await call(client, 'anchor_navigate', { url: pages.url('/form') });
    expect(nav.isError).toBeFalsy();
    expect(textOf(nav)).toContain('Page title: Form');
    const snapshot = textOf(await call(client, 'anchor_snapshot'));
    expect(snapshot).toContain('heading "Greeter"');
    const box = refOf(snapshot, /textbox "Name"/);
    const button = refOf(snapshot, /button "Greet"/);

    expect((await call(client, 'browser_type', { element: 'Name', ref: box, text: 'Ada' })).isError).toBeFalsy();
    expect((await call(client, 'anchor_click', { element: 'Greet', ref: button })).isError).toBeFalsy();
    expect(textOf(await call(client, 'anchor_snapshot'))).toContain('Hello, Ada!');
    const evaluated = await call(client, 'browser_evaluate', { function: "() => document.getElementById('out').textContent" });
    expect(textOf(evaluated)).toContain('"Hello, Ada!"');

    const shot = await call(client, 'anchor_take_screenshot');
    const image = shot.content[0];
    expect(image.type).toBe('image');
    if (image.type !== 'image') return;
    expect(image.mimeType).toBe('image/png');
    expect(Buffer.from(image.data, 'base64').subarray(1, 4).toString()).toBe('PNG');

    // Errors are results a model can recover from, not transport failures.
    const stale = await call(client, 'anchor_click', { ref: 'e999' });
    expect(stale.isError).toBe(true);
    expect(textOf(stale)).toMatch(/not on the page.*anchor_snapshot/);
    await expect(call(client, 'anchor_navigate', { url: 'not a url' })).resolves.toMatchObject({ isError: true });

    expect(textOf(await call(client, 'session_live_view'))).toContain(`/live/${id}?token=`);
    expect(textOf(await call(client, 'session_end', { session_id: id }))).toContain(`Ended browser session ${id}`);
    expect((await sessionRow(server.db, id))?.status).toBe('completed');
    await eventually(() => gone(root).processes.length === 0 && !gone(root).directory, 10_000, 'the browser gone');
    const after = await call(client, 'anchor_snapshot', { session_id: id });
    expect(after.isError).toBe(true);
    expect(textOf(after)).toContain(`Browser session ${id}: Session is not running`);
  });

  it("does not let another project's key reach this project's browser or MCP sessions", async () => {
    const { client, transport } = await connect();
    const id = started(await call(client, 'session_start', HEADLESS));
    const other = await createProject(server.db, { name: 'other', source: 'test' });
    const { client: stranger } = await connect({ 'service-api-key': other.key });
    expect(textOf(await call(stranger, 'session_list'))).not.toContain(id);
    for (const [tool, args] of [
      ['anchor_snapshot', { session_id: id }],
      ['session_end', { session_id: id }],
      ['session_live_view', { session_id: id }],
    ] as const) {
      const r = await call(stranger, tool, args);
      expect(r.isError).toBe(true);
      expect(textOf(r)).toContain(`No browser session ${id} in this project`);
    }
    // The first client's MCP session, addressed with the other key, is not found.
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        'service-api-key': other.key,
        'mcp-session-id': transport.sessionId!,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    expect((await sessionRow(server.db, id))?.status).toBe('running');
    expect(textOf(await call(client, 'session_list'))).toContain(id);
    await transport.terminateSession();
    await eventually(async () => (await sessionRow(server.db, id))?.status === 'completed', 10_000, 'DELETE /mcp to end its browser session');
  });

  it('ends the browser session of a client that disappears, once the MCP session is idle', async () => {
    const { client } = await connect();
    // Started on first use, with the session defaults but headless to spare the machine.
    const id = started(await call(client, 'session_start', HEADLESS));
    const root = rootOf(browsersDir, id);
    expect((await call(client, 'anchor_navigate', { url: pages.url('/') })).isError).toBeFalsy();
    // The client goes away without a DELETE.
    await client.close();
    await eventually(
      async () => (await sessionRow(server.db, id))?.status === 'completed',
      (IDLE_SECONDS + 10) * 1000,
      'the idle MCP session to end its browser',
    );
    expect((await sessionRow(server.db, id))?.end_reason).toBe('idle_timeout');
    await eventually(() => gone(root).processes.length === 0 && !gone(root).directory, 10_000, 'the browser gone');
  });

  it('starts a browser session on first use when none was started', async () => {
    const { client, transport } = await connect();
    const before = (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions'))[0].n;
    const r = await call(client, 'anchor_tab_list');
    expect(r.isError).toBeFalsy();
    expect(textOf(r)).toContain('Tabs:');
    expect((await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sessions'))[0].n).toBe(before + 1);
    await transport.terminateSession();
  });
});
