// bench/session-churn: 300 create/end cycles against a server running as its own process,
// then count the Chromium processes and browser roots left (goal 0 and 0) and the server's
// RSS growth from after warm-up to the end (goal under 10%). The same number of raw
// Playwright launch/close cycles runs beside it, for the time per cycle.
// Usage: pnpm exec tsx bench/session-churn.ts [--cycles 300]
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { machine, ms, percentile, rounds } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--cycles') + 1]) || 300;
const server = await startServerProcess({ BROWSER_POOL_SIZE: '0', SESSION_CREATE_RATE_PER_MINUTE: '100000' });
const { browsersDir } = server;
const chromiumProcesses = () => {
  try {
    return execFileSync('pgrep', ['-f', `chromium.*${browsersDir}`])
      .toString()
      .trim()
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
};
const roots = () => (existsSync(browsersDir) ? readdirSync(browsersDir).filter((d) => !d.startsWith('.')).length : 0);

async function cycle(): Promise<void> {
  const res = await server.request('/v1/sessions', { method: 'POST', body: JSON.stringify({ browser: { headless: { active: true } } }) });
  const body = (await res.json()) as { data: { id: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(body)}`);
  const end = await server.request(`/v1/sessions/${body.data.id}`, { method: 'DELETE' });
  if (end.status !== 200) throw new Error(`end answered ${end.status}`);
}

console.log(`bench/session-churn on ${machine()}; ${N} cycles`);
await rounds('warm-up', 10, cycle);
const rssBefore = server.rss();
const times = await rounds('create/end', N, cycle);
const rssAfter = server.rss();
const leftProcesses = chromiumProcesses();
const leftRoots = roots();
await server.stop();
const afterShutdown = { processes: chromiumProcesses(), roots: roots() };

const ref = await rounds('raw Playwright launch/close', N, async () => {
  const b = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'],
  });
  await b.close();
});

const growth = (rssAfter - rssBefore) / rssBefore;
console.log(
  `create/end cycle: ours p50 ${ms(percentile(times, 50))} p95 ${ms(percentile(times, 95))} | raw Playwright launch/close p50 ${ms(percentile(ref, 50))} p95 ${ms(percentile(ref, 95))} | p50 ratio ${(percentile(times, 50) / percentile(ref, 50)).toFixed(2)}x`,
);
console.log(`left after ${N} cycles, server running: ${leftProcesses} Chromium processes, ${leftRoots} browser roots (goal 0 and 0)`);
console.log(`left after graceful shutdown: ${afterShutdown.processes} Chromium processes, ${afterShutdown.roots} browser roots`);
console.log(
  `server RSS: ${(rssBefore / 2 ** 20).toFixed(1)} MiB after warm-up → ${(rssAfter / 2 ** 20).toFixed(1)} MiB after ${N} cycles: ${(growth * 100).toFixed(1)}% (goal < 10%)`,
);
process.exit(leftProcesses + leftRoots + afterShutdown.processes + afterShutdown.roots === 0 ? 0 : 1);
