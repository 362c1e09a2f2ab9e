// bench/mcp: navigate + snapshot + click on the form fixture through /mcp (the SDK's
// client over Streamable HTTP, a headless session without recording), against the same
// three actions through Playwright directly on a headless Chromium launched before the
// clock starts: page.goto, page.ariaSnapshot({mode: 'ai'}), a click on the ref it gave.
// Our tools also read the page's URL and title after navigate and click, and the snapshot
// tool answers them with the tree: the raw side reads the title too, so both do the same work.
// A third side, for what /mcp itself adds: Playwright over the cdp_url of another session
// of the same kind (a session's browser sends its traffic through the server's metering
// proxy and carries its extensions; a plain Chromium does neither).
// Each round times each action of one side, then of the others, on a quiet machine.
// The server runs as its own process, as deployed (bench/server-process.ts).
// Goal: p50 per action within 1.3x of raw Playwright's.
// Usage: pnpm exec tsx bench/mcp.ts [--rounds 30]
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { machine, ms, percentile, progress, quiet } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 30;
const GOAL = 1.3;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const ACTIONS = ['navigate', 'snapshot', 'click'] as const;
type Action = (typeof ACTIONS)[number];
const SIDES = ['mcp', 'raw', 'session'] as const;
type Side = (typeof SIDES)[number];

const form = readFileSync(new URL('../fixtures/site/form.html', import.meta.url));
const site = createServer((_req, res) => {
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(form);
});
await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/form.html`;

const buttonRef = (snapshot: string) => {
  const ref = /button "Greet" \[ref=(\w+)\]/.exec(snapshot)?.[1];
  if (!ref) throw new Error(`no button ref in the snapshot:\n${snapshot}`);
  return ref;
};

console.log(`bench/mcp on ${machine()}; ${N} rounds, the sides taking turns`);
const server = await startServerProcess({ MCP_IDLE_TIMEOUT_SECONDS: '3600' });
const raw = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
let viaCdp: Browser | undefined;
const transport = new StreamableHTTPClientTransport(new URL(`${server.base}/mcp`), { requestInit: { headers: { 'service-api-key': server.apiKey } } });
const client = new Client({ name: 'bench', version: '1.0.0' });
try {
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    if (r.isError) throw new Error(`${name}: ${text}`);
    return text;
  };
  await call('session_start', { headless: true, recording: false, idle_timeout: 30, max_duration: 60 });
  const page: Page = await (await raw.newContext()).newPage();
  const created = await server.request('/v1/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      browser: { headless: { active: true } },
      session: { recording: { active: false }, timeout: { idle_timeout: 30, max_duration: 60 } },
    }),
  });
  if (!created.ok) throw new Error(`POST /v1/sessions: ${created.status} ${await created.text()}`);
  viaCdp = await chromium.connectOverCDP(((await created.json()) as { data: { cdp_url: string } }).data.cdp_url);
  const sessionPage = viaCdp.contexts()[0]!.pages()[0] ?? (await viaCdp.contexts()[0]!.newPage());

  /** Playwright's actions on a page, as our tools do them: the title read after navigate and click, and with the snapshot. */
  const playwright = (p: Page): Record<Action, () => Promise<unknown>> => {
    let ref = '';
    const title = () => p.evaluate('document.title');
    return {
      navigate: async () => (await p.goto(pageUrl), title()),
      snapshot: async () => (ref = buttonRef((await Promise.all([p.ariaSnapshot({ mode: 'ai' }), title()]))[0])),
      click: async () => (await p.locator(`aria-ref=${ref}`).click(), title()),
    };
  };
  const sides: Record<Side, Record<Action, () => Promise<unknown>>> = (() => {
    let mcpRef = '';
    return {
      mcp: {
        navigate: () => call('anchor_navigate', { url: pageUrl }),
        snapshot: async () => (mcpRef = buttonRef(await call('anchor_snapshot'))),
        click: () => call('anchor_click', { element: 'Greet', ref: mcpRef }),
      },
      raw: playwright(page),
      session: playwright(sessionPage),
    };
  })();

  // One untimed round each: connections, the injected script, caches.
  for (const side of Object.values(sides)) for (const a of ACTIONS) await side[a]();
  const times = Object.fromEntries(SIDES.map((side) => [side, Object.fromEntries(ACTIONS.map((a) => [a, [] as number[]]))])) as Record<
    Side,
    Record<Action, number[]>
  >;
  for (let i = 1; i <= N; i++) {
    for (const name of SIDES) {
      await quiet();
      for (const a of ACTIONS) {
        const t = performance.now();
        await sides[name][a]();
        times[name][a].push(performance.now() - t);
      }
    }
    progress('mcp / raw / session', i, N);
  }

  let met = true;
  for (const a of ACTIONS) {
    const [ours, ref, session] = SIDES.map((side) => percentile(times[side][a], 50)) as [number, number, number];
    const ratio = ours / ref;
    met &&= ratio <= GOAL;
    console.log(
      `${a.padEnd(8)}: /mcp p50 ${ms(ours)} p95 ${ms(percentile(times.mcp[a], 95))} | raw Playwright p50 ${ms(ref)} p95 ${ms(percentile(times.raw[a], 95))} | p50 ratio ${ratio.toFixed(2)}x` +
        ` | Playwright on a session's cdp_url p50 ${ms(session)} (/mcp ${(ours / session).toFixed(2)}x)`,
    );
  }
  const total = (side: Side) =>
    percentile(
      times[side].navigate.map((n, i) => n + times[side].snapshot[i]! + times[side].click[i]!),
      50,
    );
  console.log(
    `all three: /mcp p50 ${ms(total('mcp'))} | raw Playwright p50 ${ms(total('raw'))} | ratio ${(total('mcp') / total('raw')).toFixed(2)}x | on a session's cdp_url ${ms(total('session'))}`,
  );
  console.log(`goal: p50 per action ≤ ${GOAL}x: ${met ? 'met' : 'NOT met'}`);
} finally {
  await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
  await viaCdp?.close().catch(() => {});
  await raw.close();
  await server.stop();
  site.close();
}
