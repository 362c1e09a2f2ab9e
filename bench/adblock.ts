// bench/adblock: what browser.adblock saves on an ad-heavy page and what it costs on a page
// without ads, against raw Playwright loading the same pages in the same run.
//   raw:  Chromium launched by Playwright before the clock starts, its proxy the ad site.
//   off:  a headless session without recording, `adblock: {active: false}`, its proxy the
//         ad site (custom proxy, so the session's own traffic proxy sits in between).
//   on:   the same session with ad-block on (the default).
// Each round, each side in turn opens a page, loads http://news.example/ (the ad-heavy
// article of fixtures/ads.ts, ~30 requests of its own and ~14 to ad and tracker hosts) or
// http://news.example/plain (the same article without ads) to its load event, and closes it;
// the ad site adds latency as a network would (first party 20 ms, ad hosts 60 ms). Bytes are
// what the site sent while the page was open. Then the same with two pages loading at once.
// The goal: on a page without ads, ad-block on costs ≤ 5 % of load time against off.
// Then what it costs a launch: a cold session (no pool) created and ended, on against off,
// beside Playwright's chromium.launch() with a page: wall time and the CPU of every process
// of the run (the server's and its browsers' with the bench's), taken 300 ms after each end.
// Usage: pnpm exec tsx bench/adblock.ts [--rounds 12]
import { chromium, type Browser } from 'playwright-core';
import { AD_PAGE, PLAIN_PAGE, startAdSite } from '../fixtures/ads.js';
import { machine, ms, percentile, ratioInterval, takingTurns, treeCpuMs } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 12;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const site = await startAdSite({ publisherMs: 20, adsMs: 60 });
const server = await startServerProcess({ BROWSER_POOL_SIZE: '0' });
/** Playwright's own headless launch, the raw side; `proxy` for the page loads. */
const launchRaw = (proxy?: { server: string }) =>
  chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    ...(proxy ? { proxy } : {}),
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
  });
const raw = await launchRaw({ server: site.proxyUrl });

async function session(adblock: boolean): Promise<{ id: string; browser: Browser }> {
  const body = {
    browser: { headless: { active: true }, adblock: { active: adblock } },
    session: { recording: { active: false }, proxy: { active: true, type: 'custom', server: site.proxyUrl } },
  };
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify(body) });
  const created = (await res.json()) as { data: { id: string; cdp_url: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(created)}`);
  return { id: created.data.id, browser: await chromium.connectOverCDP(created.data.cdp_url) };
}

const on = await session(true);
const off = await session(false);
const contexts = { raw: await raw.newContext(), off: off.browser.contexts()[0]!, on: on.browser.contexts()[0]! };
type Side = keyof typeof contexts;
const sides: Side[] = ['raw', 'off', 'on'];

/** Loads `url` in `parallel` new pages of a side at once; answers the bytes the site sent meanwhile. */
async function load(side: Side, url: string, parallel: number): Promise<number> {
  const before = site.bytes();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      const page = await contexts[side].newPage();
      try {
        await page.goto(url, { waitUntil: 'load', timeout: 60_000 });
      } finally {
        await page.close();
      }
    }),
  );
  return site.bytes() - before;
}

type Figures = Record<Side, { times: number[]; bytes: number[] }>;
async function measure(url: string, parallel: number): Promise<Figures> {
  const bytes = Object.fromEntries(sides.map((s) => [s, [] as number[]])) as Record<Side, number[]>;
  const times = await takingTurns(
    N,
    Object.fromEntries(sides.map((s) => [s, { run: async () => void bytes[s].push(await load(s, url, parallel)) }])) as Record<
      Side,
      { run: () => Promise<void> }
    >,
  );
  return Object.fromEntries(sides.map((s) => [s, { times: times[s], bytes: bytes[s] }])) as Figures;
}

console.log(`bench/adblock on ${machine()}; ${N} rounds a case, the sides taking turns`);
const cases: { name: string; url: string; parallel: number }[] = [
  { name: 'ad-heavy page', url: AD_PAGE, parallel: 1 },
  { name: 'page without ads', url: PLAIN_PAGE, parallel: 1 },
  { name: 'ad-heavy page, 2 at once', url: AD_PAGE, parallel: 2 },
  { name: 'page without ads, 2 at once', url: PLAIN_PAGE, parallel: 2 },
];
const results: { name: string; f: Figures }[] = [];
/** A cold launch a side: wall times, and CPU-ms a launch. */
const launches = { wall: {} as Record<Side, number[]>, cpu: {} as Record<Side, number[]> };
async function launchOnce(side: Side): Promise<void> {
  if (side === 'raw') {
    const b = await launchRaw();
    await b.newPage();
    return b.close();
  }
  const body = { browser: { headless: { active: true }, adblock: { active: side === 'on' } }, session: { recording: { active: false } } };
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify(body) });
  const created = (await res.json()) as { data: { id: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(created)}`);
  await server.request(`/v1/sessions/${created.data.id}`, { method: 'DELETE' });
}
try {
  // One untimed load a side first: the first page of a browser pays for its renderer's start.
  for (const s of sides) await load(s, PLAIN_PAGE, 1);
  for (const c of cases) results.push({ name: c.name, f: await measure(c.url, c.parallel) });
  for (const s of sides) await launchOnce(s);
  let cpuFrom = 0;
  launches.wall = await takingTurns(
    N,
    Object.fromEntries(
      sides.map((s) => [
        s,
        {
          run: () => ((cpuFrom = treeCpuMs()), launchOnce(s)),
          between: async () => {
            await new Promise((r) => setTimeout(r, 300));
            (launches.cpu[s] ??= []).push(treeCpuMs() - cpuFrom);
          },
        },
      ]),
    ) as Record<Side, { run: () => Promise<void>; between: () => Promise<void> }>,
  );
} finally {
  await on.browser.close().catch(() => {});
  await off.browser.close().catch(() => {});
  await server.request(`/v1/sessions/${on.id}`, { method: 'DELETE' }).catch(() => {});
  await server.request(`/v1/sessions/${off.id}`, { method: 'DELETE' }).catch(() => {});
  await raw.close();
  await server.stop();
  await site.close();
}

const p50 = (v: number[]) => percentile(v, 50);
const kB = (n: number) => `${(n / 1000).toFixed(0)} kB`;
for (const { name, f } of results) {
  console.log(`\n${name}`);
  for (const s of sides) {
    console.log(
      `  ${s.padEnd(4)} load p50 ${ms(p50(f[s].times)).padStart(9)} p95 ${ms(percentile(f[s].times, 95)).padStart(9)}   bytes p50 ${kB(p50(f[s].bytes))}`,
    );
  }
  // Each round's on/off ratio: the rounds pair the sides under the same load.
  const onOff = f.on.times.map((t, i) => t / f.off.times[i]!);
  const [lo, hi] = ratioInterval(onOff);
  console.log(
    `  on/off load p50 ${(p50(f.on.times) / p50(f.off.times)).toFixed(3)} (rounds' geometric 95 % interval ${lo.toFixed(3)}-${hi.toFixed(3)}), bytes ${(p50(f.on.bytes) / p50(f.off.bytes)).toFixed(3)}; ` +
      `against raw Playwright: off ${(p50(f.off.times) / p50(f.raw.times)).toFixed(2)}×, on ${(p50(f.on.times) / p50(f.raw.times)).toFixed(2)}×`,
  );
}
const plain = results.find((r) => r.name === 'page without ads')!.f;
const cost = p50(plain.on.times) / p50(plain.off.times) - 1;
console.log(`\ngoal: ad-block's cost on a page without ads ≤ 5 %: ${(cost * 100).toFixed(1)} % (${cost <= 0.05 ? 'met' : 'missed'})`);

console.log('\ncold launch (headless, no recording, no pool), created and ended; raw: chromium.launch() with a page');
for (const s of sides) console.log(`  ${s.padEnd(4)} wall p50 ${ms(p50(launches.wall[s])).padStart(9)}   CPU p50 ${ms(p50(launches.cpu[s])).padStart(9)}`);
console.log(
  `  ad-block's CPU a launch: ${ms(p50(launches.cpu.on) - p50(launches.cpu.off))} (on/off ${(p50(launches.cpu.on) / p50(launches.cpu.off)).toFixed(2)}x)`,
);
