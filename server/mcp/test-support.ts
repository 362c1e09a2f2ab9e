// What the MCP tests share: an SDK client on a test server's /mcp, and readers of tool results.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

export interface Connected {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** tools/call; the result as the server answered it (errors included). */
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** tools/call of a tool that must succeed: its text. */
  ok(name: string, args?: Record<string, unknown>): Promise<string>;
}

/** fetch: the transport's, for a test that watches its requests. */
export async function connectMcp(baseUrl: string, headers: Record<string, string>, fetch?: FetchLike): Promise<Connected> {
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), { requestInit: { headers }, ...(fetch ? { fetch } : {}) });
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(transport);
  const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
  const ok = async (name: string, args: Record<string, unknown> = {}) => {
    const r = await call(name, args);
    if (r.isError) throw new Error(`${name} failed: ${textOf(r)}`);
    return textOf(r);
  };
  return { client, transport, call, ok };
}

export const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

/** The id of the browser session a session_start result names. */
export const startedId = (text: string) => /Started browser session (\S+)/.exec(text)![1];

/** The ref of the snapshot line that matches. */
export function refOf(snapshot: string, line: RegExp): string {
  const found = snapshot.split('\n').find((l) => line.test(l));
  const ref = found && /\[ref=(\w+)\]/.exec(found)?.[1];
  if (!ref) throw new Error(`no ref for ${line} in:\n${snapshot}`);
  return ref;
}
