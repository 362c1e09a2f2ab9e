// bench/batch: batch sessions against raw Playwright, in one run.
//   accept: POST /v1/batch-sessions with count 5,000, the time to its 200 (then cancelled at
//           once; the few items already being provisioned are ended).
//   drain:  a 50-session batch (headless), from acceptance to the batch's end (every item
//           running), as sessions provisioned per second; beside it raw Playwright launching
//           50 headless browsers with the same concurrency (BATCH_CONCURRENCY), all kept
//           open until the last is up, as launches per second; and the ratio. Also, for
//           where the time goes: the same number of POST /v1/sessions, same concurrency.
// The server runs in-process (server/testing/harness.ts) on PGlite, with the default
// BROWSER_POOL_SIZE unless the environment sets one.
// Usage: pnpm exec tsx bench/batch.ts [--sessions 50] [--accept 5000] [--concurrency 4]
import { setTimeout as sleep } from 'node:timers/promises';
import { loadavg } from 'node:os';
import { chromium, type Browser } from 'playwright-core';
import { loadConfig } from '../server/config/config.js';
import { startTestServer, type TestServer } from '../server/testing/harness.js';
import { machine, ms } from './machine.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const defaults = loadConfig({});
const SESSIONS = arg('sessions', 50);
const ACCEPT = arg('accept', 5000);
const CONCURRENCY = arg('concurrency', Number(process.env.BATCH_CONCURRENCY ?? defaults.batchConcurrency));
const POOL = process.env.BROWSER_POOL_SIZE ?? String(defaults.browserPoolSize);
const chromiumPath = process.env.CHROMIUM_PATH ?? defaults.chromiumPath;
const flags = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync', '--disable-quic', '--no-sandbox'];
// Recording off: raw Playwright records nothing either (a recording adds a screencast and an encoder a session).
const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false }, timeout: { idle_timeout: 10, max_duration: 30 } } };

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

async function endAll(server: TestServer): Promise<void> {
  const rows = await server.db.query<{ id: string }>(`SELECT id FROM sessions WHERE status IN ('starting', 'running')`);
  for (let i = 0; i < rows.length; i += 8) await Promise.all(rows.slice(i, i + 8).map((r) => json(server, 'DELETE', `/v1/sessions/${r.id}`)));
}

console.log(`bench/batch on ${machine()}`);
console.log(`settings: accept ${ACCEPT}, drain ${SESSIONS} headless sessions, BATCH_CONCURRENCY ${CONCURRENCY}, BROWSER_POOL_SIZE ${POOL}`);
const load = () => loadavg().map((n) => n.toFixed(1)).join(' ');
console.log(`load average at start: ${load()} (other work on the machine moves every figure; the ratios are measured in the same run)`);

const server = await startTestServer({
  env: {
    BROWSER_POOL_SIZE: POOL,
    BATCH_CONCURRENCY: String(CONCURRENCY),
    MAX_CONCURRENT_BROWSERS: String(SESSIONS + Number(POOL) + 8),
    SESSION_CREATE_RATE_PER_MINUTE: '100000',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  },
});

let exitCode = 0;
try {
  // Warm-up: the first request compiles validators and warms the database.
  const warm = await json(server, 'POST', '/v1/batch-sessions', { count: 2, configuration: HEADLESS });
  await waitEnd(server, warm.body.data.batch_id, 120_000);
  await endAll(server);

  // Accept 5,000.
  const t0 = performance.now();
  const accepted = await json(server, 'POST', '/v1/batch-sessions', { count: ACCEPT, configuration: HEADLESS });
  const acceptMs = performance.now() - t0;
  if (accepted.status !== 200) throw new Error(`accepting ${ACCEPT} answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const big = accepted.body.data.batch_id as string;
  const c0 = performance.now();
  const cancelled = await json(server, 'DELETE', `/v1/batch-sessions/${big}`);
  const cancelMs = performance.now() - c0;
  const g0 = performance.now();
  const bigDetail = (await json(server, 'GET', `/v1/batch-sessions/${big}`)).body.data;
  const getMs = performance.now() - g0;
  // Items already being provisioned at the cancel finish; then their sessions are ended.
  let after = bigDetail;
  for (let i = 0; i < 600 && after.pending_requests > 0; i++) {
    await sleep(100);
    after = (await json(server, 'GET', `/v1/batch-sessions/${big}`)).body.data;
  }
  await endAll(server);
  console.log(
    `accept ${ACCEPT}: 200 in ${ms(acceptMs)} (status ${accepted.body.data.status}); cancel ${ms(cancelMs)} (${cancelled.status}); ` +
      `GET with ${bigDetail.sessions.length} items ${ms(getMs)}; provisioned before the cancel: ${after.completed_requests}`,
  );

  // Drain 50: ours.
  const d0 = performance.now();
  const drain = await json(server, 'POST', '/v1/batch-sessions', { count: SESSIONS, configuration: HEADLESS });
  const done = await waitEnd(server, drain.body.data.batch_id, 600_000);
  const wallMs = performance.now() - d0;
  const serverMs = Date.parse(done.completed_at) - Date.parse(done.created_at);
  if (done.status !== 'completed' || done.completed_requests !== SESSIONS) {
    console.log(`the drain batch ended ${done.status}: ${done.completed_requests} completed, ${done.failed_requests} failed: ${done.sessions.find((s: any) => s.error)?.error ?? ''}`);
    exitCode = 1;
  }
  await endAll(server);
  // The server's own timestamps: acceptance to the last item's session running.
  const oursRate = (done.completed_requests / serverMs) * 1000;

  // The same sessions through POST /v1/sessions, same concurrency (no batch machinery).
  let made = 0;
  let failed = 0;
  const a0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (made + failed < SESSIONS) {
        made++;
        const r = await json(server, 'POST', '/v1/sessions', HEADLESS);
        if (r.status !== 200) {
          made--;
          failed++;
        }
      }
    }),
  );
  const apiMs = performance.now() - a0;
  await endAll(server);
  const apiRate = (made / apiMs) * 1000;

  // Drain 50: raw Playwright, same number, same concurrency, kept open to the end.
  const browsers: Browser[] = [];
  let next = 0;
  const r0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < SESSIONS) {
        next++;
        browsers.push(await chromium.launch({ executablePath: chromiumPath, headless: true, args: flags }));
      }
    }),
  );
  const rawMs = performance.now() - r0;
  for (let i = 0; i < browsers.length; i += 8) await Promise.all(browsers.slice(i, i + 8).map((b) => b.close()));
  const rawRate = (SESSIONS / rawMs) * 1000;

  console.log(
    `drain ${SESSIONS}: ours ${oursRate.toFixed(2)} sessions/s (${ms(wallMs)} from POST to the batch's end seen by the client; ${ms(serverMs)} created_at → completed_at) | ` +
      `raw Playwright ${rawRate.toFixed(2)} launches/s (${ms(rawMs)}) | ratio ours/raw ${(oursRate / rawRate).toFixed(2)}x`,
  );
  console.log(`for comparison: ${made} POST /v1/sessions with concurrency ${CONCURRENCY}: ${apiRate.toFixed(2)} sessions/s (${ms(apiMs)}${failed ? `, ${failed} refused` : ''}); batch/API ${(oursRate / apiRate).toFixed(2)}x`);
  console.log(`load average at the end: ${load()}`);
} catch (err) {
  console.error(err);
  exitCode = 1;
} finally {
  await endAll(server).catch(() => {});
  await server.close();
}
process.exit(exitCode);
