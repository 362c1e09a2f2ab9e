// bench/noisy-neighbour: what a session's memory and CPU caps (server/browser/cgroup.ts) cost
// and what they spare the others (issue 47).
//   cost:    page loads on a session under the default caps, on one of a project whose caps
//            are 0 (its groups made, nothing capped), and on raw Playwright's own browser (no
//            group at all), taking turns. Goal: nothing measurable.
//   episode: two ordinary sessions load pages alone (their solo p50), then go on while a
//            third session's page allocates until it is stopped (its project capped at
//            512 MiB); the loads during each episode, from the hog's navigation to its
//            session's end with `memory_limit`, against the solo p50. Goal: ≤ 1.5x. The same
//            loads on raw Playwright's browser beside them, for the machine's own share.
// The server runs in its own process on its defaults (as root, so with caps), headless
// sessions without recording for the loads; the hog is the default session (headful, recorded).
// Usage: pnpm exec tsx bench/noisy-neighbour.ts [--loads 60] [--episodes 3]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { chromium, type Page } from 'playwright-core';
import { machine, ms, percentile } from './machine.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const LOADS = Number(arg('loads')) || 60;
const EPISODES = Number(arg('episodes')) || 3;
const ADMIN_TOKEN = 'adm_bench_noisy_neighbour_0123456789ab';
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

// An ordinary page with some work in it: 2,000 elements laid out, a script that walks them.
const rows = Array.from({ length: 2_000 }, (_, i) => `<li class="r${i % 7}">row ${i} <b>${(i * 7919) % 1000}</b></li>`).join('');
const site = createServer((req, res) => {
  res.setHeader('content-type', 'text/html');
  if (req.url === '/hog')
    return res.end(
      '<title>hog</title><script>const kept = []; setInterval(() => { for (let i = 0; i < 8; i++) kept.push(new Float64Array(2 ** 17).fill(1)); }, 0);</script>',
    );
  res.end(
    `<!doctype html><title>page</title><ul>${rows}</ul><script>let n = 0; for (const b of document.querySelectorAll('b')) n += Number(b.textContent); document.title = String(n);</script>`,
  );
});
await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;

async function admin(server: ServerProcess, path: string, body: unknown): Promise<any> {
  const res = await fetch(server.base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: unknown }).data;
}

/** A project with its own caps, and a key of it. */
async function project(server: ServerProcess, name: string, caps: object): Promise<string> {
  const p = await admin(server, '/admin/v1/projects', { name, ...caps });
  return (await admin(server, `/admin/v1/projects/${p.id}/keys`, {})).key as string;
}

async function session(server: ServerProcess, key: string, body: object): Promise<{ id: string; page: Page; close(): Promise<void> }> {
  const res = await fetch(`${server.base}/v1/sessions`, {
    method: 'POST',
    headers: { 'service-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const s = ((await res.json()) as { data: { id: string; cdp_url: string } }).data;
  if (res.status !== 200) throw new Error(`create answered ${res.status}`);
  const browser = await chromium.connectOverCDP(s.cdp_url);
  return {
    id: s.id,
    page: browser.contexts()[0]!.pages()[0]!,
    close: async () => {
      await browser.close();
      await fetch(`${server.base}/v1/sessions/${s.id}`, { method: 'DELETE', headers: { 'service-api-key': key } });
    },
  };
}

async function timedLoad(page: Page, into: number[]): Promise<void> {
  const t = performance.now();
  await page.goto(`${base}/?${Math.random()}`);
  into.push(performance.now() - t);
}

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };
console.log(`bench/noisy-neighbour on ${machine()}; ${LOADS} loads a side, ${EPISODES} episodes; load average ${load()}`);
const server = await startServerProcess({ ADMIN_TOKEN, SESSION_CREATE_RATE_PER_MINUTE: '100000' });
const raw = await chromium.launch({ executablePath: chromiumPath, args: flags });
try {
  const health = (await (await fetch(`${server.base}/healthz`)).json()) as { browsers: { limits: unknown } };
  console.log(`server's caps: ${JSON.stringify(health.browsers.limits)}`);
  if (health.browsers.limits === 'off') throw new Error('the server cannot cap browsers here (not root, or no cgroup v1): nothing to measure');
  const uncappedKey = await project(server, 'uncapped', { browser_memory_limit_mb: 0, browser_cpu_limit: 0 });
  const hogKey = await project(server, 'hog', { browser_memory_limit_mb: 512 });

  // Cost: the same loads, taking turns.
  const capped = await session(server, server.apiKey, HEADLESS);
  const uncapped = await session(server, uncappedKey, HEADLESS);
  const rawPage = await (await raw.newContext()).newPage();
  const cost = { capped: [] as number[], uncapped: [] as number[], raw: [] as number[] };
  for (let i = 0; i < LOADS; i++) {
    await timedLoad(capped.page, cost.capped);
    await timedLoad(uncapped.page, cost.uncapped);
    await timedLoad(rawPage, cost.raw);
  }
  await uncapped.close();
  const [c50, u50, r50] = [cost.capped, cost.uncapped, cost.raw].map((t) => percentile(t.slice(3), 50));
  console.log(`\ncost of the caps, one load at a time (load average ${load()}):`);
  console.log(`  capped (default caps) p50 ${ms(c50!)} | uncapped project p50 ${ms(u50!)} | raw Playwright p50 ${ms(r50!)}`);
  console.log(`  capped/uncapped ${(c50! / u50!).toFixed(2)}x, capped/raw ${(c50! / r50!).toFixed(2)}x`);

  // Episodes: two neighbours and raw Playwright load pages; alone, then beside a hog.
  const other = await session(server, server.apiKey, HEADLESS);
  const neighbours = [capped.page, other.page];
  const solo: number[] = [];
  const soloRaw: number[] = [];
  for (let i = 0; i < LOADS / 2; i++) await Promise.all([...neighbours.map((p) => timedLoad(p, solo)), timedLoad(rawPage, soloRaw)]);
  const during: number[] = [];
  const duringRaw: number[] = [];
  const ended: number[] = [];
  for (let e = 0; e < EPISODES; e++) {
    const hog = await session(server, hogKey, {});
    let over = false;
    const loop = (async () => {
      while (!over) await Promise.all([...neighbours.map((p) => timedLoad(p, during)), timedLoad(rawPage, duringRaw)]);
    })();
    const t = performance.now();
    await hog.page.goto(`${base}/hog`).catch(() => {});
    for (let reason: string | null = null; reason === null; await new Promise((r) => setTimeout(r, 100))) {
      const s = (await (await fetch(`${server.base}/v1/sessions/${hog.id}`, { headers: { 'service-api-key': hogKey } })).json()) as any;
      if (s.data.status === 'failed' || s.data.status === 'completed') reason = s.data.end_reason;
      if (performance.now() - t > 120_000) throw new Error('the hog was not ended within 2 minutes');
      if (reason !== null && reason !== 'memory_limit') throw new Error(`the hog ended with ${reason}`);
    }
    ended.push(performance.now() - t);
    over = true;
    await loop;
    await hog.close().catch(() => {});
    process.stderr.write(`  episode ${e + 1}/${EPISODES}: the hog ended memory_limit after ${ms(ended.at(-1)!)} (load ${load()})\n`);
  }
  const [s50, d50, sr50, dr50] = [solo, during, soloRaw, duringRaw].map((t) => percentile(t, 50));
  console.log(`\nneighbours of a hog (${during.length} loads during ${EPISODES} episodes; load average ${load()}):`);
  console.log(`  sessions: solo p50 ${ms(s50!)}, during p50 ${ms(d50!)} = ${(d50! / s50!).toFixed(2)}x solo (goal ≤ 1.5x)`);
  console.log(`  raw Playwright beside them: solo p50 ${ms(sr50!)}, during p50 ${ms(dr50!)} = ${(dr50! / sr50!).toFixed(2)}x`);
  console.log(`  the hog ended memory_limit after p50 ${ms(percentile(ended, 50))} (its navigation to the end of its session)`);
  await Promise.all([capped.close(), other.close()]);
} finally {
  await raw.close();
  await server.stop();
  site.close();
}
