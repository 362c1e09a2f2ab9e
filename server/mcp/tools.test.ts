// The element, tab, dialog, PDF and log tools of /mcp, each through the SDK's client over
// real HTTP against real Chromium, on a fixture page that writes what happened to it
// (window.effects): the test asserts the effect on the page, not only that the call
// succeeded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, processesUnder } from '../sessions/test-support.js';
import { startMcpPages, type McpPages } from './test-pages.js';
import { connectMcp, refOf, type Connected } from './test-support.js';

describe.each(backends)('MCP page tools on %s', (backend) => {
  let server: TestServer;
  let pages: McpPages;
  let mcp: Connected;

  beforeAll(async () => {
    server = await startTestServer({ backend });
    pages = await startMcpPages();
    mcp = await connectMcp(server.url, { 'service-api-key': server.apiKey });
    // Headless: Chromium prints PDFs only there.
    await mcp.ok('session_start', { headless: true, recording: false });
  });
  afterAll(async () => {
    await mcp?.transport.terminateSession().catch(() => {});
    await mcp?.client.close().catch(() => {});
    await server?.close();
    await pages?.close();
    if (server) expect(processesUnder(browsersDirFor(server.dataDir))).toEqual([]);
  });

  /** The fixture page, freshly loaded, and its snapshot. */
  const widgets = async () => {
    await mcp.ok('anchor_navigate', { url: pages.url('/widgets') });
    // The page's fetch of /api/ping has answered once its effect is written.
    await mcp.ok('anchor_wait_for', { text: 'ping:pong' });
    return mcp.ok('anchor_snapshot');
  };
  const effects = async (): Promise<string[]> =>
    JSON.parse(/Result:\n([\s\S]*)$/.exec(await mcp.ok('browser_evaluate', { function: '() => window.effects' }))![1]);

  it('drags an element onto another, by refs', async () => {
    const snap = await widgets();
    await mcp.ok('anchor_drag', { start_element: 'Card', start_ref: refOf(snap, /button "Card"/), end_element: 'Bin', end_ref: refOf(snap, /region "Bin"/) });
    expect(await effects()).toContain('dropped:card');
  });

  it('selects an option of a <select>, by label and by value', async () => {
    const snap = await widgets();
    const colour = refOf(snap, /combobox "Colour"/);
    expect(await mcp.ok('anchor_select_option', { ref: colour, values: ['Green'] })).toContain('["green"]');
    await mcp.ok('anchor_select_option', { ref: colour, values: ['blue'] });
    expect(await effects()).toEqual(expect.arrayContaining(['colour:green', 'colour:blue']));
  });

  it('hovers an element', async () => {
    const snap = await widgets();
    await mcp.ok('anchor_hover', { element: 'Hover me', ref: refOf(snap, /button "Hover me"/) });
    expect(await effects()).toContain('hovered');
  });

  it('uploads files to a file input, the page reading their content', async () => {
    const snap = await widgets();
    const input = refOf(snap, /button "Attachment"|"Attachment"/);
    const files = [
      { name: 'a.txt', mime_type: 'text/plain', content_base64: Buffer.from('first file').toString('base64') },
      { name: 'b.csv', content_base64: Buffer.from('x,y').toString('base64') },
    ];
    expect(await mcp.ok('anchor_file_upload', { ref: input, files })).toContain('Set 2 files');
    await mcp.ok('anchor_wait_for', { text: 'files:' });
    expect(await effects()).toContain('files:a.txt=first file,b.csv=x,y');
  });

  it('reports a confirm the page opens and answers it, then a prompt with text', async () => {
    const snap = await widgets();
    // The click opens the dialog: the result says so and what to do.
    expect(await mcp.ok('anchor_click', { ref: refOf(snap, /button "Ask"/) })).toMatch(/confirm dialog is open: "Proceed\?".*anchor_handle_dialog/);
    // The page is blocked until the dialog is answered: other page tools say so.
    const blocked = await mcp.call('anchor_snapshot');
    expect(blocked.isError).toBe(true);
    expect(await mcp.ok('anchor_handle_dialog', { accept: false })).toContain('Dismissed the confirm "Proceed?"');
    expect(await effects()).toContain('confirm:false');

    await mcp.ok('anchor_click', { ref: refOf(snap, /button "Name"/) });
    expect(await mcp.ok('anchor_handle_dialog', { accept: true, prompt_text: 'Ada' })).toContain('Accepted the prompt');
    expect(await effects()).toContain('prompt:Ada');
    const none = await mcp.call('anchor_handle_dialog', { accept: true });
    expect(none.isError).toBe(true);
  });

  it("lists the tab's console messages and network requests", async () => {
    await widgets();
    const console = await mcp.ok('anchor_console_messages');
    expect(console).toContain('[log] widgets ready');
    expect(console).toContain('[error] widgets warning');
    const requests = await mcp.ok('anchor_network_requests');
    expect(requests).toContain(`[GET] ${pages.url('/widgets')} => 200`);
    expect(requests).toContain(`[GET] ${pages.url('/api/ping')} => 200`);
  });

  it('opens, lists, selects and closes tabs', async () => {
    await widgets();
    const opened = await mcp.ok('anchor_tab_new', { url: pages.url('/second') });
    expect(opened).toMatch(/0: \[Widgets\]/);
    expect(opened).toMatch(/1: \(current\) \[Second\]/);
    // The page tools act on the new tab.
    expect(await mcp.ok('anchor_snapshot')).toContain('heading "Second page"');

    expect(await mcp.ok('anchor_tab_select', { index: 0 })).toMatch(/0: \(current\) \[Widgets\]/);
    expect(await mcp.ok('anchor_snapshot')).toContain('heading "Widgets"');
    expect(await mcp.ok('anchor_tab_list')).toMatch(/1: \[Second\]/);

    const closed = await mcp.ok('anchor_tab_close', { index: 1 });
    expect(closed).not.toContain('Second');
    expect(closed).toMatch(/0: \(current\) \[Widgets\]/);
    const missing = await mcp.call('anchor_tab_select', { index: 5 });
    expect(missing.isError).toBe(true);
  });

  it('saves the tab as a PDF', async () => {
    await widgets();
    const r = await mcp.call('anchor_pdf_save');
    expect(r.isError).toBeFalsy();
    const resource = r.content.find((c) => c.type === 'resource');
    expect(resource?.type).toBe('resource');
    if (resource?.type !== 'resource' || !('blob' in resource.resource)) throw new Error('no PDF resource');
    expect(resource.resource.mimeType).toBe('application/pdf');
    const pdf = Buffer.from(resource.resource.blob, 'base64');
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.length).toBeGreaterThan(1_000);
  });
});
