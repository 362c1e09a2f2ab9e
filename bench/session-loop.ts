// bench/session-loop: an outside client's loop, as issue 46 measured it — create a session
// over HTTP, connect over CDP, load a local page, release it — back to back, against raw
// Playwright doing the same page load in the same run:
//   launch:  chromium.launch() per session (headless, as a plain client would), newPage,
//            goto, close;
//   context: a new context on a browser launched before the clock, newPage, goto, close.
// Cells: 1 client and 10 clients (each client runs its sessions one after another, the
// sessions shared out until N are done); sides: our default session (no options: headful,
// recorded, the warm pool), headless without recording, a profile, an extension. The
// server runs on its defaults (its own process) except for the per-key creation rate, which
// a loop of 100 sessions would pass. Sides run in blocks that take turns (N/BLOCKS sessions
// each), so that drift over the run and other work on the machine hit them alike.
// Goals (issue 46): 1 client, defaults p50 ≤ 1.3x context and p99 ≤ 2x its own p50;
// 10 clients, p50 ≤ 1.0x launch, nothing refused.
// Usage: pnpm exec tsx bench/session-loop.ts [--n 100] [--clients 1,10] [--sides defaults,headless,profile,extension]
//        [--env KEY=VALUE,...]  (server settings for this run, e.g. a pool's)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { chromium, type Browser } from 'playwright-core';
import { zipOf } from '../server/testing/zip-of.js';
import { machine, ms, percentile } from './machine.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const N = Number(arg('n')) || 100;
const CLIENTS = (arg('clients') ?? '1,10').split(',').map(Number);
const BLOCKS = Math.min(4, N);
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const env = Object.fromEntries(
  (arg('env') ?? '')
    .split(',')
    .filter(Boolean)
    .map((kv) => kv.split('=') as [string, string]),
);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

const page = createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  if (req.url === '/cookie') res.setHeader('set-cookie', 'sid=bench; Path=/; Max-Age=86400');
  res.end('<!doctype html><title>bench</title><h1>bench page</h1><script>document.body.append("ready")</script>');
});
await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
const pageUrl = `http://127.0.0.1:${(page.address() as AddressInfo).port}/`;

class Refused extends Error {}

async function ourLoop(server: ServerProcess, body: object): Promise<void> {
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify(body) });
  const created = (await res.json()) as { data: { id: string; cdp_url: string } };
  if (res.status === 429 || res.status === 503) throw new Refused(`create answered ${res.status}`);
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(created)}`);
  const browser = await chromium.connectOverCDP(created.data.cdp_url);
  const context = browser.contexts()[0]!;
  const p = context.pages()[0] ?? (await context.newPage());
  await p.goto(pageUrl);
  await browser.close();
  const end = await server.request(`/v1/sessions/${created.data.id}`, { method: 'DELETE' });
  if (end.status !== 200) throw new Error(`end answered ${end.status}`);
}

/** A saved profile (a cookie of the page's site) and an uploaded extension, for the sides that name them. */
async function fixtures(server: ServerProcess): Promise<{ profile: object; extension: object }> {
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify({ browser: { headless: { active: true } } }) });
  const s = ((await res.json()) as { data: { id: string; cdp_url: string } }).data;
  const browser = await chromium.connectOverCDP(s.cdp_url);
  await browser.contexts()[0]!.pages()[0]!.goto(`${pageUrl}cookie`);
  await browser.close();
  const made = await server.request('/v1/profiles', { method: 'POST', body: JSON.stringify({ name: 'bench', source: 'session', session_id: s.id }) });
  if (made.status !== 200) throw new Error(`profile creation answered ${made.status}`);
  await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' });
  for (const deadline = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const p = (await (await server.request('/v1/profiles/bench')).json()) as { data: { status: string } };
    if (p.data.status === 'ready') break;
    if (Date.now() > deadline) throw new Error('the profile did not become ready');
  }
  const form = new FormData();
  form.set('name', 'bench-extension');
  const manifest = { manifest_version: 3, name: 'bench', version: '1.0', content_scripts: [{ matches: ['<all_urls>'], js: ['c.js'] }] };
  const zip = await zipOf({ 'manifest.json': JSON.stringify(manifest), 'c.js': 'document.documentElement.dataset.bench = "1";' });
  form.set('file', new Blob([new Uint8Array(zip)]), 'bench.zip');
  const up = await fetch(`${server.base}/v1/extensions`, { method: 'POST', body: form, headers: { 'service-api-key': server.apiKey } });
  const ext = (await up.json()) as { data: { id: string } };
  if (up.status !== 200) throw new Error(`extension upload answered ${up.status}: ${JSON.stringify(ext)}`);
  return { profile: { browser: { profile: { name: 'bench' } } }, extension: { browser: { extensions: [ext.data.id] } } };
}

interface Tally {
  times: number[];
  refused: number;
  failed: string[];
}

/** `n` sessions by `clients` clients, each one after another; every session timed alone. */
async function cell(n: number, clients: number, run: () => Promise<void>, into: Tally): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < n) {
        next++;
        const t = performance.now();
        try {
          await run();
          into.times.push(performance.now() - t);
        } catch (err) {
          if (err instanceof Refused) into.refused++;
          else into.failed.push((err as Error).message);
        }
      }
    }),
  );
}

console.log(`bench/session-loop on ${machine()}; ${N} sessions per cell, clients ${CLIENTS.join(' and ')}; load average ${load()}`);
const server = await startServerProcess({ SESSION_CREATE_RATE_PER_MINUTE: '100000', ...env });
const pre = await chromium.launch({ executablePath: chromiumPath, args: flags });
try {
  const extra = await fixtures(server);
  const all: Record<string, () => Promise<void>> = {
    launch: async () => {
      const b: Browser = await chromium.launch({ executablePath: chromiumPath, args: flags });
      const p = await b.newPage();
      await p.goto(pageUrl);
      await b.close();
    },
    context: async () => {
      const c = await pre.newContext();
      const p = await c.newPage();
      await p.goto(pageUrl);
      await c.close();
    },
    defaults: () => ourLoop(server, {}),
    headless: () => ourLoop(server, { browser: { headless: { active: true } }, session: { recording: { active: false } } }),
    profile: () => ourLoop(server, extra.profile),
    extension: () => ourLoop(server, extra.extension),
  };
  const wanted = (arg('sides') ?? 'defaults,headless,profile,extension').split(',');
  const sides = Object.keys(all).filter((k) => k === 'launch' || k === 'context' || wanted.includes(k));
  for (const clients of CLIENTS) {
    const loadAtStart = load();
    const tallies = Object.fromEntries(sides.map((k) => [k, { times: [], refused: 0, failed: [] } as Tally]));
    for (let b = 0; b < BLOCKS; b++) {
      const share = Math.floor(N / BLOCKS) + (b < N % BLOCKS ? 1 : 0);
      // The order rotates block by block: no side always follows the same one.
      for (let i = 0; i < sides.length; i++) {
        const side = sides[(i + b) % sides.length]!;
        await cell(share, clients, all[side]!, tallies[side]!);
      }
      process.stderr.write(`  ${clients} client(s): block ${b + 1}/${BLOCKS} (load ${load()})\n`);
    }
    const launch50 = percentile(tallies.launch!.times, 50);
    const context50 = percentile(tallies.context!.times, 50);
    console.log(`\n${clients} client(s), load average ${loadAtStart} at the start, ${load()} at the end:`);
    for (const side of sides) {
      const t = tallies[side]!;
      const [p50, p99] = [percentile(t.times, 50), percentile(t.times, 99)];
      const vs = side === 'launch' || side === 'context' ? '' : ` | ${(p50 / context50).toFixed(2)}x context, ${(p50 / launch50).toFixed(2)}x launch`;
      const lost = t.refused + t.failed.length ? ` | refused ${t.refused}, failed ${t.failed.length}${t.failed[0] ? ` (${t.failed[0]})` : ''}` : '';
      console.log(`  ${side.padEnd(9)} p50 ${ms(p50).padStart(10)} p99 ${ms(p99).padStart(10)} (p99/p50 ${(p99 / p50).toFixed(2)})${vs}${lost}`);
    }
  }
} finally {
  await pre.close();
  await server.stop();
  page.close();
}
