// bench/session-churn: 300 create/end cycles against a server running as its own process,
// then count the Chromium processes and browser roots left (goal 0 and 0) and the server's
// RSS growth from after warm-up to the end (goal under 10%). The same number of raw
// Playwright launch/close cycles runs beside it, for the time per cycle.
// Usage: pnpm exec tsx bench/session-churn.ts [--cycles 300]
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createServer } from 'node:net';
import { chromium } from 'playwright-core';
import { machine, ms, percentile, rounds } from './machine.js';

const N = Number(process.argv[process.argv.indexOf('--cycles') + 1]) || 300;
const root = new URL('..', import.meta.url).pathname;
const dataDir = mkdtempSync(join(tmpdir(), 'cb-churn-'));
const browsersDir = join(tmpdir(), `cb-${createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12)}`);
const apiKey = `sk_bench_${randomBytes(12).toString('hex')}`;
const port = await new Promise<number>((r) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = (s.address() as { port: number }).port;
    s.close(() => r(p));
  });
});
const base = `http://127.0.0.1:${port}`;

const server = spawn(join(root, 'node_modules/.bin/tsx'), ['server/main.ts'], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, BOOTSTRAP_API_KEY: apiKey, BROWSER_POOL_SIZE: '0', LOG_LEVEL: 'error', ALLOW_PRIVATE_NETWORKS: 'true', SESSION_CREATE_RATE_PER_MINUTE: '100000' },
});
for (let i = 0; !(await fetch(`${base}/healthz`).then((r) => r.ok, () => false)); i++) {
  if (i > 120) throw new Error('server did not start');
  await new Promise((r) => setTimeout(r, 500));
}
// tsx runs the server in a child of its own: measure the process that listens.
const serverPid = Number(execFileSync('sh', ['-c', `ss -ltnpH 'sport = :${port}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2`]).toString().trim());
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${serverPid}/status`, 'utf8'))![1]) * 1024;
const chromiumProcesses = () => {
  try {
    return execFileSync('pgrep', ['-f', `chromium.*${browsersDir}`]).toString().trim().split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
};
const roots = () => (existsSync(browsersDir) ? readdirSync(browsersDir).filter((d) => !d.startsWith('.')).length : 0);

async function cycle(): Promise<void> {
  const headers = { 'service-api-key': apiKey, 'content-type': 'application/json' };
  const res = await fetch(`${base}/v1/sessions`, { method: 'POST', headers, body: JSON.stringify({ browser: { headless: { active: true } } }) });
  const body = (await res.json()) as { data: { id: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(body)}`);
  const end = await fetch(`${base}/v1/sessions/${body.data.id}`, { method: 'DELETE', headers });
  if (end.status !== 200) throw new Error(`end answered ${end.status}`);
}

// The server is ours to stop whatever happens below.
process.on('exit', () => server.kill('SIGKILL'));
console.log(`bench/session-churn on ${machine()}; ${N} cycles`);
await rounds('warm-up', 10, cycle);
const rssBefore = rss();
const times = await rounds('create/end', N, cycle);
const rssAfter = rss();
const leftProcesses = chromiumProcesses();
const leftRoots = roots();
server.kill('SIGTERM');
await new Promise((r) => server.once('exit', r));
const afterShutdown = { processes: chromiumProcesses(), roots: roots() };
rmSync(dataDir, { recursive: true, force: true });

const ref = await rounds('raw Playwright launch/close', N, async () => {
  const b = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic'] });
  await b.close();
});

const growth = (rssAfter - rssBefore) / rssBefore;
console.log(`create/end cycle: ours p50 ${ms(percentile(times, 50))} p95 ${ms(percentile(times, 95))} | raw Playwright launch/close p50 ${ms(percentile(ref, 50))} p95 ${ms(percentile(ref, 95))} | p50 ratio ${(percentile(times, 50) / percentile(ref, 50)).toFixed(2)}x`);
console.log(`left after ${N} cycles, server running: ${leftProcesses} Chromium processes, ${leftRoots} browser roots (goal 0 and 0)`);
console.log(`left after graceful shutdown: ${afterShutdown.processes} Chromium processes, ${afterShutdown.roots} browser roots`);
console.log(`server RSS: ${(rssBefore / 2 ** 20).toFixed(1)} MiB after warm-up → ${(rssAfter / 2 ** 20).toFixed(1)} MiB after ${N} cycles: ${(growth * 100).toFixed(1)}% (goal < 10%)`);
process.exit(leftProcesses + leftRoots + afterShutdown.processes + afterShutdown.roots === 0 ? 0 : 1);
