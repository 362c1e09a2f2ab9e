// The service's own tools, sessionless: the web fetch (a page's HTML or Markdown), a
// page's screenshot and its PDF. They call the tools capability's handlers, the code POST
// /v1/tools/... runs, so rate limits, charges and errors are the same as over HTTP.
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AuthedContext } from '../http/context.js';
import type { ToolHandlers } from '../tools/index.js';
import { withProgress } from './progress.js';
import { failure, run, text } from './results.js';

const url = z.string().url().max(8192).describe('http(s) URL of the page');

export function registerServiceTools(server: McpServer, handlers: ToolHandlers, context: () => AuthedContext): void {
  const headers = new Headers();
  /** An answer other than 200 is the tool's error, its message as the API gives it. */
  const refused = (res: { status: number; body: unknown }): CallToolResult => {
    const body = res.body as { error?: string | { message?: string } };
    const message = typeof body?.error === 'string' ? body.error : (body?.error?.message ?? 'failed');
    return failure(`${message} (HTTP ${res.status})`);
  };

  server.registerTool(
    'web_fetch',
    {
      description:
        "Fetch a web page in the service's own browsers (JavaScript run, bot challenges passed) and answer its content as Markdown or HTML; no browser session needed",
      inputSchema: {
        url,
        format: z.enum(['markdown', 'html']).optional().describe('Default markdown'),
        wait: z.number().int().min(0).max(30_000).optional().describe('Milliseconds to wait after the page loads'),
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (a, extra) =>
      run(async () => {
        const res = await withProgress(extra, (progress) => {
          progress(`Loading ${a.url} in the service's browser`);
          return handlers.fetchWebpageContent(
            { params: {}, query: {}, body: { url: a.url, format: a.format ?? 'markdown', ...(a.wait ? { wait: a.wait } : {}) }, headers },
            context(),
          );
        });
        return res.status === 200 ? text(String(res.body)) : refused(res);
      }),
  );
  server.registerTool(
    'screenshot_webpage',
    {
      description: "A screenshot of a web page taken in the service's own browsers; no browser session needed",
      inputSchema: {
        url,
        width: z.number().int().min(100).max(3840).optional().describe('Viewport width, default 1280'),
        height: z.number().int().min(100).max(2160).optional().describe('Viewport height, default 720'),
        full_page: z.boolean().optional().describe('The whole scrollable page'),
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (a, extra) =>
      run(async () => {
        const res = await withProgress(extra, (progress) => {
          progress(`Loading ${a.url} in the service's browser`);
          return handlers.takeScreenshot(
            { params: {}, query: {}, body: { url: a.url, width: a.width, height: a.height, full_page: a.full_page }, headers },
            context(),
          );
        });
        if (res.status !== 200) return refused(res);
        return { content: [{ type: 'image', data: Buffer.from(res.body as Uint8Array).toString('base64'), mimeType: 'image/png' }] };
      }),
  );
  server.registerTool(
    'pdf_webpage',
    {
      description: "A web page printed to PDF in the service's own browsers; no browser session needed",
      inputSchema: {
        url,
        format: z.enum(['Letter', 'Legal', 'Tabloid', 'Ledger', 'A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6']).optional().describe('Paper size, default Letter'),
        landscape: z.boolean().optional(),
        print_background: z.boolean().optional(),
      },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    (a, extra) =>
      run(async () => {
        const res = await withProgress(extra, (progress) => {
          progress(`Loading ${a.url} in the service's browser`);
          return handlers.renderPagePdf(
            { params: {}, query: {}, body: { url: a.url, format: a.format, landscape: a.landscape, print_background: a.print_background }, headers },
            context(),
          );
        });
        if (res.status !== 200) return refused(res);
        const pdf = Buffer.from(res.body as Uint8Array);
        return {
          content: [
            { type: 'text', text: `PDF of ${a.url} (${pdf.length} bytes).` },
            { type: 'resource', resource: { uri: a.url, mimeType: 'application/pdf', blob: pdf.toString('base64') } },
          ],
        };
      }),
  );
}
