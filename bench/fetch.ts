// Benchmark: the web fetch tool (POST /v1/tools/fetch/webpage on the real server, running as
// its own process as deployed, over real HTTP) against raw Playwright doing the same work in
// the same run: a warm browser, a new context per page, goto, the same readiness wait
// (server/page/readiness.ts), content.
// Both fetch the fixture site's script-rendered page, at concurrency 1, 4 and 8.
// Raw Playwright launches the same Chromium with its own defaults (and the switches this
// network needs); a third side, reported beside the goal, is raw Playwright given the Chromium
// features the service turns off (DISABLED_FEATURES), so that what the tool's own layers cost
// (HTTP, queueing, stealth, consent and challenge checks, the traffic proxy) shows apart from
// what its browser configuration saves.
//
//   pnpm exec tsx bench/fetch.ts [--rounds N]   (rounds per concurrency level; default 8)
//
// Each round is a block of each side, max(6, 3 x concurrency) pages, the sides taking turns.
// Prints the machine, p50, p95 and pages per second of each side, the ratios, and how far
// the throughput ratio can be trusted: this machine's speed drifts by 10 % and more over a
// minute, alike for every side, so a block's ratio to the block beside it varies by several
// per cent; the interval is the 95 % one of the mean of those round ratios.
// Goal: p50 at most 1.15x raw Playwright's (its defaults), throughput at least 0.9x.
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { startFixtureServer } from '../fixtures/server.js';
import { atConcurrency, machine, percentile, progress, quiet, ratioInterval } from './machine.js';
import { startServerProcess, type ServerProcess } from './server-process.js';
import { DISABLED_FEATURES } from '../server/browser/index.js';
import { listPids } from '../server/browser/procfs.js';
import { NetworkTracker, waitForReady } from '../server/page/readiness.js';

export interface Stats {
  p50: number;
  p95: number;
  pagesPerSecond: number;
  /** CPU milliseconds per page: Node (this process, plus the server's for the tool) and the side's browser. */
  nodeCpuMs?: number;
  browserCpuMs?: number;
}

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** Every process: its arguments, parent and CPU ticks (its own and its reaped children's). */
function processes(): Map<number, { args: string[]; ppid: number; ticks: number }> {
  const procs = new Map<number, { args: string[]; ppid: number; ticks: number }>();
  for (const pid of listPids()) {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.set(pid, { args, ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) });
    } catch {
      // gone
    }
  }
  return procs;
}

/** A browser's main process (not one of its --type= children) with an argument that `matches`. */
const mainProcess = (matches: (arg: string) => boolean) => (args: string[]) => args.some(matches) && !args.some((a) => a.startsWith('--type='));

/**
 * CPU time (ms) of a browser and every process under it (zygotes, renderers, GPU and
 * utility processes): the main processes are those `isMain` picks.
 * Each process counts its reaped children too: a context's renderers exit with it and their
 * time lives on only in their zygote's (about 60 % of a page's browser CPU).
 */
function browserCpu(isMain: (args: string[]) => boolean): number {
  const procs = processes();
  const mains = new Set([...procs].filter(([, info]) => isMain(info.args)).map(([pid]) => pid));
  const inTree = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 10; hops++) {
      const info = procs.get(p);
      if (!info) return false;
      if (mains.has(p)) return true;
      p = info.ppid;
    }
    return false;
  };
  let ticks = 0;
  for (const [pid, info] of procs) if (inTree(pid)) ticks += info.ticks;
  return ticks * TICK_MS;
}

/** The tool against one raw side. */
export interface Comparison {
  raw: Stats;
  p50Ratio: number;
  throughputRatio: number;
  /** 95 % interval of the throughput ratio, from the rounds' ratios (tool block / raw block of the same round). */
  throughputInterval: [number, number];
  roundRatios: number[];
}

export interface LevelResult {
  concurrency: number;
  tool: Stats;
  /** Raw Playwright with its defaults: what the goal is measured against. */
  stock: Comparison;
  /** Raw Playwright given the service's disabled Chromium features. */
  tuned: Comparison;
}

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
// What Chromium needs on this network, nothing more (the service's browsers have these too).
const FLAGS = [
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
  '--disable-dev-shm-usage',
];
// Inert switches that tell the raw browsers' processes apart for the CPU figures.
const STOCK_MARK = '--bench-raw-stock';
const TUNED_MARK = '--bench-raw-tuned';

/** One block of one side: its answers, its wall time and the CPU it cost. */
interface Block {
  latencies: number[];
  wallS: number;
  pages: number;
  nodeCpuMs: number;
  browserCpuMs?: number;
}

/**
 * Runs `total` jobs, `concurrency` at a time. The wall time ends with the last answer (both
 * sides close their contexts behind their answers); the CPU is read once those contexts are
 * closed and the machine is quiet again, so that it includes the closing and nothing of the
 * next block.
 */
async function block(
  total: number,
  concurrency: number,
  job: () => Promise<void>,
  marker?: (args: string[]) => boolean,
  server?: ServerProcess,
): Promise<Block> {
  await quiet();
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  const s0 = server?.cpuMs() ?? 0;
  const b0 = marker ? browserCpu(marker) : 0;
  const wallS =
    (await atConcurrency(total, concurrency, async () => {
      const t = performance.now();
      await job();
      latencies.push(performance.now() - t);
    })) / 1000;
  await Promise.all(closing);
  await quiet();
  const cpu = process.cpuUsage(cpu0);
  return {
    latencies,
    wallS,
    pages: total,
    nodeCpuMs: (cpu.user + cpu.system) / 1000 + (server ? server.cpuMs() - s0 : 0),
    ...(marker ? { browserCpuMs: browserCpu(marker) - b0 } : {}),
  };
}

/** A side's figures over its blocks. */
function stats(blocks: Block[]): Stats {
  const pages = blocks.reduce((n, b) => n + b.pages, 0);
  const sum = (f: (b: Block) => number) => blocks.reduce((n, b) => n + f(b), 0);
  const latencies = blocks.flatMap((b) => b.latencies);
  return {
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    pagesPerSecond: pages / sum((b) => b.wallS),
    nodeCpuMs: sum((b) => b.nodeCpuMs) / pages,
    browserCpuMs: sum((b) => b.browserCpuMs ?? 0) / pages,
  };
}

/** Contexts closing behind answers already given (both sides close after answering). */
const closing = new Set<Promise<void>>();

async function rawFetch(browser: Browser, url: string): Promise<string> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const tracker = new NetworkTracker(page);
    await page.goto(url, { waitUntil: 'commit', timeout: 120_000 });
    await waitForReady(page, tracker, { deadline: Date.now() + 120_000 });
    const html = await page.content();
    tracker.dispose();
    return html;
  } finally {
    const c = context.close();
    closing.add(c);
    void c.finally(() => closing.delete(c));
  }
}

export async function runFetchBench(options: { rounds?: number; levels?: number[]; out?: (line: string) => void } = {}): Promise<LevelResult[]> {
  const out = options.out ?? ((line: string) => console.log(line));
  const rounds = options.rounds ?? 8;
  const levels = options.levels ?? [1, 4, 8];
  const cpu = cpus();
  out(`machine: ${machine()}`);

  const fx = await startFixtureServer();
  const url = `${fx.url}/site/script-rendered.html`;
  // One fetch browser, as raw Playwright has one warm browser; enough slots for the levels.
  const server = await startServerProcess({ FETCH_BROWSERS: '1', FETCH_MAX_CONCURRENCY: String(Math.max(...levels)), FETCH_RATE_PER_MINUTE: '1000000' });
  const stock = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...FLAGS, STOCK_MARK] });
  // Playwright passes a --disable-features of its own and Chromium reads only the last one:
  // the tuned browser gets Playwright's list and the service's in one.
  const isStock = mainProcess((a) => a === STOCK_MARK);
  const stockArgs = [...processes().values()].find((p) => isStock(p.args))?.args ?? [];
  const playwrightDisabled = (stockArgs.findLast((a) => a.startsWith('--disable-features=')) ?? '--disable-features=').slice('--disable-features='.length);
  const tunedDisabled = [...playwrightDisabled.split(',').filter(Boolean), ...DISABLED_FEATURES].join(',');
  const tunedBrowser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...FLAGS, `--disable-features=${tunedDisabled}`, TUNED_MARK] });
  const results: LevelResult[] = [];
  try {
    // Which processes are whose: the tool browsers' roots (t-*), the raw browsers' switches.
    const toolRoots = `${server.browsersDir}/t-`;
    const toolMarker = mainProcess((a) => a.includes(toolRoots));
    const stockMarker = isStock;
    const tunedMarker = mainProcess((a) => a === TUNED_MARK);
    const cpuText = (st: Stats) => `${(st.nodeCpuMs ?? 0).toFixed(0)}+${(st.browserCpuMs ?? 0).toFixed(0)}`;
    let currentConcurrency = 1;
    const toolFetch = async () => {
      const res = await server.request('/v1/tools/fetch/webpage', { method: 'POST', body: JSON.stringify({ url }) });
      const html = await res.text();
      if (res.status !== 200 || !html.includes('Rendered by script')) throw new Error(`tool answered ${res.status}: ${html.slice(0, 200)}`);
    };
    const rawJob = (browser: Browser) => async () => {
      // At most `concurrency` contexts at once, closing ones included, as the tool's slots.
      while (closing.size >= currentConcurrency) await Promise.race(closing);
      const html = await rawFetch(browser, url);
      if (!html.includes('Rendered by script')) throw new Error('raw Playwright did not render the page');
    };
    const stockJob = rawJob(stock);
    const tunedJob = rawJob(tunedBrowser);
    // Warm all three: the fetch browser's launch, JIT, caches.
    await block(4, 2, toolFetch);
    await block(4, 2, stockJob);
    await block(4, 2, tunedJob);

    out(
      `page: script-rendered fixture; per level ${rounds} rounds, each a block of max(6, 3 x concurrency) pages of each side, the order turning round every round; times in ms`,
    );
    out(
      "raw: Playwright launching the same Chromium with its defaults (the goal); tuned: the same, given the Chromium features the service turns off (for the tool's own overhead)",
    );
    out(
      'concurrency | tool p50 | tool p95 | tool pages/s | raw p50 | raw p95 | raw pages/s | p50 ratio | throughput ratio (95 % interval) | CPU ms/page tool (node+browser) | raw | tuned p50 | tuned pages/s | vs tuned: p50 ratio, throughput ratio (95 % interval) | tuned CPU',
    );
    for (const concurrency of levels) {
      currentConcurrency = concurrency;
      // The sides take turns in blocks, the order turning round every round, so that drift
      // (other load on the machine, its clock, caches) hits them alike; a block is a few
      // rounds of the concurrency, so that ramping up and down is a small part of it.
      const size = Math.max(6, 3 * concurrency);
      const blocks = { tool: [] as Block[], stock: [] as Block[], tuned: [] as Block[] };
      const sides = {
        tool: async () => blocks.tool.push(await block(size, concurrency, toolFetch, toolMarker, server)),
        stock: async () => blocks.stock.push(await block(size, concurrency, stockJob, stockMarker)),
        tuned: async () => blocks.tuned.push(await block(size, concurrency, tunedJob, tunedMarker)),
      };
      const order = ['tool', 'stock', 'tuned'] as const;
      for (let round = 0; round < rounds; round++) {
        for (const side of round % 2 === 0 ? order : [...order].reverse()) await sides[side]();
        progress(`concurrency ${concurrency}`, (round + 1) * size, rounds * size);
      }
      const tool = stats(blocks.tool);
      const against = (raw: Block[]): Comparison => {
        const rawStats = stats(raw);
        // A round's blocks ran side by side in time: their ratio is what drift spares.
        const roundRatios = blocks.tool.map((b, i) => raw[i].wallS / b.wallS);
        return {
          raw: rawStats,
          p50Ratio: tool.p50 / rawStats.p50,
          throughputRatio: tool.pagesPerSecond / rawStats.pagesPerSecond,
          throughputInterval: ratioInterval(roundRatios),
          roundRatios,
        };
      };
      const r: LevelResult = { concurrency, tool, stock: against(blocks.stock), tuned: against(blocks.tuned) };
      results.push(r);
      const f = (n: number) => n.toFixed(0);
      const ratio = (c: Comparison) => `${c.throughputRatio.toFixed(2)} (${c.throughputInterval.map((x) => x.toFixed(2)).join('-')})`;
      const { stock: st, tuned: tu } = r;
      out(
        `${String(concurrency).padStart(11)} | ${f(tool.p50).padStart(8)} | ${f(tool.p95).padStart(8)} | ${tool.pagesPerSecond.toFixed(2).padStart(12)} | ${f(st.raw.p50).padStart(7)} | ${f(st.raw.p95).padStart(7)} | ${st.raw.pagesPerSecond.toFixed(2).padStart(11)} | ${st.p50Ratio.toFixed(2).padStart(9)} | ${ratio(st).padStart(33)} | ${cpuText(tool).padStart(31)} | ${cpuText(st.raw)} | ${f(tu.raw.p50).padStart(9)} | ${tu.raw.pagesPerSecond.toFixed(2).padStart(13)} | ${`${tu.p50Ratio.toFixed(2)}, ${ratio(tu)}`.padStart(54)} | ${cpuText(tu.raw)}`,
      );
    }
    const rounded = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(' ');
    out(`throughput ratio of each round against raw, by concurrency: ${results.map((r) => `${r.concurrency}: ${rounded(r.stock.roundRatios)}`).join('; ')}`);
    out(`and against tuned: ${results.map((r) => `${r.concurrency}: ${rounded(r.tuned.roundRatios)}`).join('; ')}`);
    out(
      `load average at the end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (${cpu.length} cores): other work on the machine skews the times`,
    );
    const worstP50 = Math.max(...results.map((r) => r.stock.p50Ratio));
    const worstThroughput = Math.min(...results.map((r) => r.stock.throughputRatio));
    const worstLow = Math.min(...results.map((r) => r.stock.throughputInterval[0]));
    out(
      `goal p50 <= 1.15x raw: ${worstP50 <= 1.15 ? 'met' : 'missed'} (worst ${worstP50.toFixed(3)}x); throughput >= 0.9x raw: ${worstThroughput >= 0.9 ? 'met' : 'missed'} (worst ${worstThroughput.toFixed(3)}x, lowest end of a 95 % interval ${worstLow.toFixed(3)}x)`,
    );
    const tunedP50 = Math.max(...results.map((r) => r.tuned.p50Ratio));
    const tunedThroughput = Math.min(...results.map((r) => r.tuned.throughputRatio));
    out(
      `against tuned raw Playwright (no goal; the tool's own layers): worst p50 ratio ${tunedP50.toFixed(3)}x, worst throughput ratio ${tunedThroughput.toFixed(3)}x`,
    );
  } finally {
    await Promise.all([stock.close(), tunedBrowser.close()]);
    await server.stop();
    await fx.close();
  }
  return results;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const i = process.argv.indexOf('--rounds');
  const rounds = i > 0 ? Number(process.argv[i + 1]) : undefined;
  if (rounds !== undefined && !(Number.isInteger(rounds) && rounds >= 2)) {
    console.error('--rounds takes a whole number of at least 2');
    process.exit(2);
  }
  runFetchBench({ rounds }).then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
