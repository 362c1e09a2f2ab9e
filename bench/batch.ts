// bench/batch: batch sessions and session creation at concurrency, against raw Playwright,
// in one run.
//   accept: POST /v1/batch-sessions with count 5,000, the time to its 200 (then cancelled at
//           once; the few items already being provisioned are ended).
//   drain:  at each concurrency (4 and 8), for each kind of session (headless without
//           recording; headless recording, as by default; the default session, headful on its
//           own Xvfb and recording): a 50-session batch with BATCH_CONCURRENCY at that
//           concurrency, from acceptance to the batch's end (every item running), and 50
//           POST /v1/sessions by that many clients, as sessions provisioned per second. Beside
//           them raw Playwright: chromium.launch (headless) + a new page, 50 with the same
//           concurrency, all kept open until the last is up, as launches per second; it runs
//           before and after our sides and its mean rate is the reference (load drift hits
//           both). Goal: ours >= 0.9x raw at concurrency 4 and 8.
// The server runs in-process (server/testing/harness.ts) on PGlite, one per concurrency, with
// the default BROWSER_POOL_SIZE unless the environment sets one.
// Usage: pnpm exec tsx bench/batch.ts [--sessions 50] [--accept 5000] [--concurrency 4,8]
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadavg } from 'node:os';
import { chromium, type Browser } from 'playwright-core';
import { loadConfig } from '../server/config/config.js';
import { startTestServer, type TestServer } from '../server/testing/harness.js';
import { atConcurrency, machine, ms, treeCpuMs } from './machine.js';

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const defaults = loadConfig({});
const SESSIONS = Number(arg('sessions', '50'));
const ACCEPT = Number(arg('accept', '5000'));
const CONCURRENCIES = arg('concurrency', '4,8').split(',').map(Number);
const GOAL = 0.9;
const POOL = process.env.BROWSER_POOL_SIZE ?? String(defaults.browserPoolSize);
const chromiumPath = process.env.CHROMIUM_PATH ?? defaults.chromiumPath;
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
const timeout = { idle_timeout: 10, max_duration: 30 };
const KINDS = {
  'headless, no recording': { browser: { headless: { active: true } }, session: { recording: { active: false }, timeout } },
  'headless, recording': { browser: { headless: { active: true } }, session: { timeout } },
  'default (headful, recording)': { session: { timeout } },
} as const;
const HEADLESS = KINDS['headless, no recording'];

async function json(server: TestServer, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await server.request(path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

async function waitEnd(server: TestServer, id: string, timeoutMs: number): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const b = (await json(server, 'GET', `/v1/batch-sessions/${id}`)).body.data;
    if (b.status !== 'pending') return b;
    if (Date.now() > deadline) throw new Error(`batch ${id} still pending after ${timeoutMs} ms: ${b.completed_requests} completed`);
    // Not too often: the polls share the server (and its database) with the work measured.
    await sleep(250);
  }
}

/** Ends every session, and waits for their recordings to be encoded (their CPU is the sessions'). */
async function endAll(server: TestServer): Promise<void> {
  const rows = await server.db.query<{ id: string }>(`SELECT id FROM sessions WHERE status IN ('starting', 'running')`);
  for (let i = 0; i < rows.length; i += 8) await Promise.all(rows.slice(i, i + 8).map((r) => json(server, 'DELETE', `/v1/sessions/${r.id}`)));
  // The recordings are encoded after the ends are answered: until no ffmpeg has run for a while.
  for (let idle = 0, i = 0; idle < 3 && i < 600; i++) {
    await sleep(200);
    idle = encoding() ? 0 : idle + 1;
  }
}

/** Whether an ffmpeg (a recording's encode) runs under this process. */
function encoding(): boolean {
  try {
    return execFileSync('ps', ['-o', 'comm=', '--ppid', String(process.pid)])
      .toString()
      .split('\n')
      .some((c) => c.trim() === 'ffmpeg');
  } catch {
    return false; // ps selected no process: no child at all
  }
}

/** A rate, sessions per second, and the CPU each session cost (every process: the server, Chromium, Xvfb, ffmpeg), from its start to its end. */
interface Measured {
  rate: number;
  cpuMs: number;
}

/** Raw Playwright: n headless launches, each with a new page, c at once, kept open until the last is up. */
async function rawRate(n: number, c: number): Promise<Measured> {
  const cpu0 = treeCpuMs();
  const browsers: Browser[] = [];
  const wall = await atConcurrency(n, c, async () => {
    const b = await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags });
    browsers.push(b);
    await b.newPage();
  });
  for (let i = 0; i < browsers.length; i += 8) await Promise.all(browsers.slice(i, i + 8).map((b) => b.close()));
  return { rate: (n / wall) * 1000, cpuMs: (treeCpuMs() - cpu0) / n };
}

console.log(`bench/batch on ${machine()}`);
console.log(`settings: accept ${ACCEPT}; drain ${SESSIONS} sessions at concurrency ${CONCURRENCIES.join(' and ')}; BROWSER_POOL_SIZE ${POOL}`);
const load = () =>
  loadavg()
    .map((n) => n.toFixed(1))
    .join(' ');
console.log(`load average at start: ${load()} (other work on the machine moves every figure; the ratios are measured in the same run)`);

const serverAt = (concurrency: number) =>
  startTestServer({
    env: {
      BROWSER_POOL_SIZE: POOL,
      BATCH_CONCURRENCY: String(concurrency),
      MAX_CONCURRENT_BROWSERS: String(SESSIONS + Number(POOL) + 8),
      SESSION_CREATE_RATE_PER_MINUTE: '100000',
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    },
  });

/** A batch of SESSIONS sessions of this kind: provisioned per second, by the server's own timestamps (acceptance to the last item running). */
async function batchRate(server: TestServer, configuration: object): Promise<Measured> {
  const cpu0 = treeCpuMs();
  const drain = await json(server, 'POST', '/v1/batch-sessions', { count: SESSIONS, configuration });
  const done = await waitEnd(server, drain.body.data.batch_id, 600_000);
  await endAll(server);
  if (done.status !== 'completed' || done.completed_requests !== SESSIONS) {
    throw new Error(
      `the batch ended ${done.status}: ${done.completed_requests} completed, ${done.failed_requests} failed: ${done.sessions.find((x: any) => x.error)?.error ?? ''}`,
    );
  }
  return { rate: (SESSIONS / (Date.parse(done.completed_at) - Date.parse(done.created_at))) * 1000, cpuMs: (treeCpuMs() - cpu0) / SESSIONS };
}

/** SESSIONS POST /v1/sessions of this kind, `concurrency` clients at once, kept open to the end. */
async function apiRate(server: TestServer, body: object, concurrency: number): Promise<Measured> {
  const cpu0 = treeCpuMs();
  const wall = await atConcurrency(SESSIONS, concurrency, async () => {
    const r = await json(server, 'POST', '/v1/sessions', body);
    if (r.status !== 200) throw new Error(`POST /v1/sessions answered ${r.status}: ${JSON.stringify(r.body)}`);
  });
  await endAll(server);
  return { rate: (SESSIONS / wall) * 1000, cpuMs: (treeCpuMs() - cpu0) / SESSIONS };
}

let exitCode = 0;
const first = await serverAt(CONCURRENCIES[0]!);
try {
  // Warm-up: the first request compiles validators and warms the database.
  const warm = await json(first, 'POST', '/v1/batch-sessions', { count: 2, configuration: HEADLESS });
  await waitEnd(first, warm.body.data.batch_id, 120_000);
  await endAll(first);

  // Accept 5,000.
  const t0 = performance.now();
  const accepted = await json(first, 'POST', '/v1/batch-sessions', { count: ACCEPT, configuration: HEADLESS });
  const acceptMs = performance.now() - t0;
  if (accepted.status !== 200) throw new Error(`accepting ${ACCEPT} answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const big = accepted.body.data.batch_id as string;
  const c0 = performance.now();
  const cancelled = await json(first, 'DELETE', `/v1/batch-sessions/${big}`);
  const cancelMs = performance.now() - c0;
  const g0 = performance.now();
  const bigDetail = (await json(first, 'GET', `/v1/batch-sessions/${big}`)).body.data;
  const getMs = performance.now() - g0;
  // Items already being provisioned at the cancel finish; then their sessions are ended.
  let after = bigDetail;
  for (let i = 0; i < 600 && after.pending_requests > 0; i++) {
    await sleep(100);
    after = (await json(first, 'GET', `/v1/batch-sessions/${big}`)).body.data;
  }
  await endAll(first);
  console.log(
    `accept ${ACCEPT}: 200 in ${ms(acceptMs)} (status ${accepted.body.data.status}); cancel ${ms(cancelMs)} (${cancelled.status}); ` +
      `GET with ${bigDetail.sessions.length} items ${ms(getMs)}; provisioned before the cancel: ${after.completed_requests}`,
  );
} catch (err) {
  console.error(err);
  exitCode = 1;
} finally {
  await first.close();
}

for (const concurrency of CONCURRENCIES) {
  const server = await serverAt(concurrency);
  try {
    await endAll(server);
    const rawBefore = await rawRate(SESSIONS, concurrency);
    const ours: [string, Measured, Measured][] = [];
    for (const [kind, body] of Object.entries(KINDS)) ours.push([kind, await batchRate(server, body), await apiRate(server, body, concurrency)]);
    const rawAfter = await rawRate(SESSIONS, concurrency);
    const raw = (rawBefore.rate + rawAfter.rate) / 2;
    const rawCpu = (rawBefore.cpuMs + rawAfter.cpuMs) / 2;
    console.log(
      `\nconcurrency ${concurrency}: raw Playwright launch + new page ${raw.toFixed(2)}/s (${rawBefore.rate.toFixed(2)} before, ${rawAfter.rate.toFixed(2)} after our sides), ` +
        `CPU ${rawCpu.toFixed(0)} ms a browser`,
    );
    for (const [kind, batch, api] of ours) {
      const worst = Math.min(batch.rate, api.rate) / raw;
      console.log(
        `  ${kind.padEnd(30)} batch ${batch.rate.toFixed(2)}/s (${(batch.rate / raw).toFixed(2)}x) | POST /v1/sessions ${api.rate.toFixed(2)}/s (${(api.rate / raw).toFixed(2)}x) ${worst >= GOAL ? 'met' : 'NOT met'}` +
          ` | CPU a session, start to end (encode included): batch ${batch.cpuMs.toFixed(0)} ms, API ${api.cpuMs.toFixed(0)} ms`,
      );
    }
  } catch (err) {
    console.error(err);
    exitCode = 1;
  } finally {
    await endAll(server).catch(() => {});
    await server.close();
  }
}
console.log(`\ngoal: >= ${GOAL}x raw at each concurrency; load average at the end: ${load()}`);
process.exit(exitCode);
