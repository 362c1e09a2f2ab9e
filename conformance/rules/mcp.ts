// M1-M6: the hosted MCP server at {base_url}/mcp (interface item 12), checked with the
// official SDK's client over Streamable HTTP: initialize, tools/list with valid input
// schemas, one navigate + snapshot round trip on the suite's form fixture, 401 without
// a key, the current page's snapshot as a resource (when the server announces resources),
// and notifications/progress on long tools. A server without /mcp (404) skips them, saying so.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress } from '@modelcontextprotocol/sdk/types.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { SuiteContext } from '../context.js';
import { check, defineRules, type T } from '../runner.js';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats: AddFormats = (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'conformance', version: '1' } },
};

export default defineRules((ctx: SuiteContext) => {
  const endpoint = () => `${ctx.baseUrl}/mcp`;
  const post = (headers: Record<string, string>) =>
    fetch(endpoint(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(INITIALIZE),
      signal: AbortSignal.timeout(ctx.probeTimeoutMs),
    });
  let served: Promise<boolean> | undefined;
  /** Skips the check on a server that has no /mcp. */
  const requireMcp = async (t: T) => {
    served ??= post({}).then(
      async (res) => {
        await res.body?.cancel();
        return res.status !== 404;
      },
      () => true,
    );
    if (!(await served)) t.skip('the server has no /mcp (404): no hosted MCP server to check');
  };
  /** A connected client with the run's key; closed (its MCP session deleted) by the caller. */
  const connect = async (t: T) => {
    await requireMcp(t);
    const key = ctx.mainKey;
    t.assert(key, 'no API key for the run');
    const transport = new StreamableHTTPClientTransport(new URL(endpoint()), { requestInit: { headers: { 'service-api-key': key } } });
    const client = new Client({ name: 'conformance', version: '1.0.0' });
    try {
      await client.connect(transport, { timeout: ctx.timeoutMs });
    } catch (err) {
      t.fail(`initialize over Streamable HTTP at ${endpoint()} failed: ${(err as Error).message}`);
    }
    return {
      client,
      close: async () => {
        await transport.terminateSession().catch(() => {});
        await client.close().catch(() => {});
      },
    };
  };
  const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  return [
    check('M1 /mcp answers initialize with a session id and the tools capability', async (t: T) => {
      const { client, close } = await connect(t);
      try {
        t.assert(client.getServerCapabilities()?.tools, 'the initialize result announces no tools capability');
        t.note(`server ${JSON.stringify(client.getServerVersion())}`);
      } finally {
        await close();
      }
    }),

    check('M2 tools/list gives every tool a name, a description and a valid JSON Schema object input schema', async (t: T) => {
      const { client, close } = await connect(t);
      try {
        const { tools } = await client.listTools(undefined, { timeout: ctx.timeoutMs });
        t.assert(tools.length > 0, 'tools/list lists no tool');
        const ajv = new Ajv2020({ strict: false });
        addFormats(ajv);
        for (const tool of tools) {
          t.assert(/^[A-Za-z0-9_.-]{1,128}$/.test(tool.name), `tool name ${JSON.stringify(tool.name)} is not a valid MCP tool name`);
          t.assert(tool.description, `tool ${tool.name} has no description`);
          t.assert(tool.inputSchema.type === 'object', `tool ${tool.name}'s inputSchema is not of type object`);
          const { $schema: _dialect, ...schema } = tool.inputSchema as Record<string, unknown>;
          try {
            ajv.compile(schema);
          } catch (err) {
            t.fail(`tool ${tool.name}'s inputSchema does not compile: ${(err as Error).message}`);
          }
        }
        const names = new Set(tools.map((x) => x.name));
        for (const needed of ['anchor_navigate', 'anchor_snapshot']) t.assert(names.has(needed), `no ${needed} tool`);
        t.note(`${tools.length} tools`);
      } finally {
        await close();
      }
    }),

    check('M3 anchor_navigate to a fixture page, then anchor_snapshot, answers its accessibility tree with element refs', async (t: T) => {
      const { client, close } = await connect(t);
      try {
        const call = (name: string, args: Record<string, unknown>) =>
          client.callTool({ name, arguments: args }, undefined, { timeout: ctx.timeoutMs * 2 }) as Promise<CallToolResult>;
        const started = await call('session_start', { headless: true, recording: false, idle_timeout: 2, max_duration: 5 });
        t.assert(!started.isError, `session_start failed: ${textOf(started)}`);
        const url = await ctx.fixtures.url('/site/form.html');
        const nav = await call('anchor_navigate', { url });
        t.assert(!nav.isError, `anchor_navigate to ${url} failed: ${textOf(nav)}`);
        const snap = await call('anchor_snapshot', {});
        t.assert(!snap.isError, `anchor_snapshot failed: ${textOf(snap)}`);
        const text = textOf(snap);
        t.assert(/heading "Greeter"/.test(text), `the snapshot does not show the fixture's heading: ${text.slice(0, 300)}`);
        t.assert(/button "Greet" \[ref=\w+\]/.test(text), `the snapshot gives the button no ref: ${text.slice(0, 300)}`);
      } finally {
        // Deleting the MCP session ends the browser session it started.
        await close();
      }
    }),

    check('M4 /mcp without a key, or with a wrong one, answers 401 with a WWW-Authenticate header', async (t: T) => {
      await requireMcp(t);
      for (const [what, headers] of [
        ['no key', {}],
        ['a wrong key', { 'service-api-key': 'sk_conformance_wrong' }],
      ] as const) {
        const res = await post(headers);
        await res.body?.cancel();
        t.assert(res.status === 401, `POST /mcp with ${what} answered ${res.status}, not 401`);
        t.assert(/^Bearer\b/i.test(res.headers.get('www-authenticate') ?? ''), `POST /mcp with ${what} answered no WWW-Authenticate: Bearer header`);
      }
    }),

    check('M5 resources/list lists resources of a running browser session, one of which reads as its current page (the aria snapshot)', async (t: T) => {
      const { client, close } = await connect(t);
      try {
        if (!client.getServerCapabilities()?.resources) t.skip('the initialize result announces no resources capability');
        const call = (name: string, args: Record<string, unknown>) =>
          client.callTool({ name, arguments: args }, undefined, { timeout: ctx.timeoutMs * 2 }) as Promise<CallToolResult>;
        const started = await call('session_start', { headless: true, recording: false, idle_timeout: 2, max_duration: 5 });
        t.assert(!started.isError, `session_start failed: ${textOf(started)}`);
        const nav = await call('anchor_navigate', { url: await ctx.fixtures.url('/site/form.html') });
        t.assert(!nav.isError, `anchor_navigate failed: ${textOf(nav)}`);
        const { resources } = await client.listResources(undefined, { timeout: ctx.timeoutMs });
        t.assert(resources.length > 0, 'resources/list lists nothing while a browser session runs');
        for (const r of resources) t.assert(r.uri && r.name, `a listed resource has no uri or name: ${JSON.stringify(r)}`);
        // The page's snapshot is the resource whose text shows the fixture's heading.
        let found: string | undefined;
        for (const r of resources.filter((x) => !x.mimeType || /^text\//.test(x.mimeType))) {
          const read = await client.readResource({ uri: r.uri }, { timeout: ctx.timeoutMs });
          t.assert(read.contents.length > 0, `resources/read of ${r.uri} answers no contents`);
          const text = read.contents.map((c) => ('text' in c ? c.text : '')).join('\n');
          if (/Greeter/.test(text)) {
            found = r.uri;
            break;
          }
        }
        t.assert(
          found,
          `no listed text resource reads as the current page (none shows the fixture's heading "Greeter"): ${resources.map((r) => r.uri).join(', ')}`,
        );
        t.note(`${resources.length} resources; the page is ${found}`);
      } finally {
        await close();
      }
    }),

    check('M6 long tools (session_start, anchor_navigate) send notifications/progress for a progressToken, progress growing', async (t: T) => {
      const { client, close } = await connect(t);
      try {
        const seen: Progress[] = [];
        const call = async (name: string, args: Record<string, unknown>) => {
          const mine: Progress[] = [];
          const r = (await client.callTool({ name, arguments: args }, undefined, {
            timeout: ctx.timeoutMs * 2,
            onprogress: (p) => mine.push(p),
          })) as CallToolResult;
          t.assert(!r.isError, `${name} failed: ${textOf(r)}`);
          for (let i = 1; i < mine.length; i++)
            t.assert(mine[i]!.progress > mine[i - 1]!.progress, `${name}'s progress did not grow: ${mine.map((p) => p.progress).join(', ')}`);
          seen.push(...mine);
        };
        await call('session_start', { headless: true, recording: false, idle_timeout: 2, max_duration: 5 });
        await call('anchor_navigate', { url: await ctx.fixtures.url('/site/form.html') });
        t.assert(seen.length > 0, 'neither session_start nor anchor_navigate sent a progress notification for the progressToken');
        t.note(
          `${seen.length} notifications: ${seen
            .map((p) => p.message ?? p.progress)
            .join(' | ')
            .slice(0, 300)}`,
        );
      } finally {
        await close();
      }
    }),
  ];
});
