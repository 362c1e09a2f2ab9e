// bench/task-run: a task that opens a fixture page and returns its title. The service side
// is timed from POST /v2/tasks/{id}/run to task.completed received by a local webhook
// receiver (queue, the run's session from the warm pool, the sandbox, the session's end,
// the outcome, the event's delivery). Against: the same script run directly with Playwright
// on a Chromium launched (and connected) before the clock starts, on a page opened before
// the clock as the run's code gets its session's, in a browser of the same kind as the
// run's session: headful on an X display (a task's browserConfiguration has no headless
// switch; our sessions are headful by default), as bench/session-start's warm reference.
// Reported beside it, not held to the goal: the same script on a headless Chromium (what
// headful costs); on a headful Chromium launched before the clock and never used, as the
// run's session is (the reference browser has loaded the page every round before: its
// connection to the site and its renderer are warm); and the same code in the sandbox
// straight against a browser (no server between), to show the sandbox's own cost apart
// (its start to the user's code, SandboxOutcome.sandboxMs, and its whole run): cold, a
// child spawned for the run against the reference browser, and warm, a child connected
// before the clock to a browser launched for it, as a warm pair's is to its session's.
// The sides take turns round by round, each round on a quiet machine. The server runs as
// its own process, as deployed (bench/server-process.ts).
// Goal: p50 within 1.5x of raw Playwright's, warm.
// Usage: pnpm exec tsx bench/task-run.ts [--rounds 10]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { loadConfig } from '../server/config/config.js';
import { createSandbox, type PreparedSandbox, type Sandbox } from '../server/sandbox/index.js';
import { freePort } from '../server/testing/free-port.js';
import { machine, ms, percentile, referenceDisplay, takingTurns } from './machine.js';
import { startServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 10;
const GOAL = 1.5;
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const SCRIPT = `export default async function run(ctx: any) {
  await ctx.page.goto(ctx.input.url);
  return { title: await ctx.page.title() };
}
`;

// The fixture page, and the webhook receiver: both local.
const form = readFileSync(new URL('../fixtures/site/form.html', import.meta.url));
const waiting = new Map<string, () => void>();
const arrived = new Set<string>();
const local = createServer((req, res) => {
  if (req.method === 'POST') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const e = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data: { run_id?: string } };
      res.writeHead(204).end();
      const id = e.data.run_id;
      if (!id) return;
      const w = waiting.get(id);
      if (w) w();
      else arrived.add(id);
    });
    return;
  }
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.end(form);
});
await new Promise<void>((r) => local.listen(0, '127.0.0.1', r));
const localBase = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
const pageUrl = `${localBase}/form.html`;

console.log(`bench/task-run on ${machine()}; ${N} rounds, the sides taking turns`);
const server = await startServerProcess({ TASK_CONCURRENCY: '1' });
const json = async (path: string, body?: unknown) => {
  const res = await server.request(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = (await res.json()) as any;
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed;
};

/** A reference Chromium, launched with a CDP port (the sandbox side reaches it too), and connected. */
async function reference(display?: string): Promise<{ wsUrl: string; browser: Browser; proc: ChildProcess; profile: string }> {
  const port = await freePort();
  const profile = mkdtempSync(join(tmpdir(), 'bench-task-run-'));
  const mode = display ? [] : ['--headless=new'];
  // Its own process group: /usr/bin/chromium is a wrapper script, and the browser it starts must end with it.
  const proc = spawn(
    chromiumPath,
    [
      ...mode,
      `--remote-debugging-port=${port}`,
      `--user-data-dir=${profile}`,
      '--no-first-run',
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      'about:blank',
    ],
    {
      stdio: 'ignore',
      detached: true,
      env: display ? { ...process.env, DISPLAY: display } : process.env,
    },
  );
  let wsUrl = '';
  for (let i = 0; i < 100 && !wsUrl; i++) {
    wsUrl = await fetch(`http://127.0.0.1:${port}/json/version`)
      .then((r) => r.json() as Promise<{ webSocketDebuggerUrl: string }>)
      .then(
        (v) => v.webSocketDebuggerUrl,
        () => '',
      );
    if (!wsUrl) await new Promise((r) => setTimeout(r, 100));
  }
  return { wsUrl, browser: await chromium.connectOverCDP(wsUrl), proc, profile };
}
type Reference = Awaited<ReturnType<typeof reference>>;
async function stopReference(ref: Reference): Promise<void> {
  await ref.browser.close().catch(() => {});
  if (ref.proc.exitCode === null && ref.proc.signalCode === null) {
    const exited = new Promise((r) => ref.proc.once('exit', r));
    process.kill(-ref.proc.pid!, 'SIGKILL');
    await exited;
  }
  // Its helper processes may still write a moment after the browser's own end.
  rmSync(ref.profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
}
const xvfb = await referenceDisplay();
const headful = await reference(xvfb.display);
const headless = await reference();
const wsUrl = headful.wsUrl;
const unused: Record<'raw' | 'warm', Reference | undefined> = { raw: undefined, warm: undefined };
const sandboxDir = mkdtempSync(join(tmpdir(), 'bench-task-run-sandbox-'));
const sandbox = createSandbox({ config: { ...loadConfig({ DATA_DIR: sandboxDir }), publicUrl: 'http://127.0.0.1' }, log: pino({ level: 'silent' }) });

try {
  await json('/v1/webhooks', { url: `${localBase}/hook`, subscribed_events: ['task.completed', 'task.failed'] });
  const task = await json('/v1/task', { name: 'bench-title', language: 'typescript' });
  await json(`/v1/task/${task.data.id}/deploy`, { code: Buffer.from(SCRIPT).toString('base64'), browserConfiguration: { recording: { active: false } } });
  const sandboxMs: number[] = [];
  const warmSandboxMs: number[] = [];
  // The raw sides' script gets a page opened before its clock starts, as the run's code gets
  // its session's page (ctx.page): in a headful browser a new page is a new window, work the
  // run does not do in its time either. Each round's page is closed after the clock, and
  // the next one opened then.
  const pages = new Map<Browser, Page>();
  const fresh = async (browser: Browser) => {
    await pages.get(browser)?.close();
    pages.set(browser, await browser.contexts()[0].newPage());
  };
  /** The script, as raw Playwright runs it. */
  const title = async (page: Page) => {
    await page.goto(pageUrl);
    if ((await page.title()) !== 'Form fixture') throw new Error('raw: wrong title');
  };
  /** The script in a sandbox, cold or prepared; its own start kept in `starts`. */
  const inSandbox = async (side: Pick<Sandbox, 'run'>, cdpUrl: string, starts: number[]) => {
    const out = await side.run({ kind: 'task', code: SCRIPT, cdpUrl, input: { url: pageUrl }, timeoutMs: 60_000 });
    if (!out.ok) throw new Error(`sandbox: ${JSON.stringify(out.error)}`);
    starts.push(out.sandboxMs);
  };
  await Promise.all([fresh(headful.browser), fresh(headless.browser)]);
  // Browsers launched before the clock and never used before it, as a run's session is: one
  // for raw's script, and one a warm sandbox (connected before the clock, as a warm pair's)
  // runs the script against.
  const relaunch = async (k: keyof typeof unused) => {
    if (unused[k]) await stopReference(unused[k]);
    unused[k] = await reference(xvfb.display);
  };
  let prepared: PreparedSandbox | undefined;
  const prepareWarm = async () => {
    await relaunch('warm');
    prepared = await sandbox.prepare(unused.warm!.wsUrl);
  };
  await Promise.all([relaunch('raw'), prepareWarm()]);

  const runService = async () => {
    const res = await json(`/v2/tasks/${task.data.id}/run`, { input_params: { url: pageUrl } });
    const runId = res.run_id as string;
    // The event may arrive before the answer is read.
    if (!arrived.delete(runId)) await new Promise<void>((resolve) => waiting.set(runId, resolve));
    waiting.delete(runId);
  };

  // One warm-up of each side: the server's bundle and warm pool, the sandbox's bundle.
  await runService();
  await sandbox.run({ kind: 'task', code: SCRIPT, cdpUrl: wsUrl, input: { url: pageUrl }, timeoutMs: 60_000 });

  const times = await takingTurns(N, {
    raw: { run: () => title(pages.get(headful.browser)!), between: () => fresh(headful.browser) },
    'raw headless': { run: () => title(pages.get(headless.browser)!), between: () => fresh(headless.browser) },
    'raw new browser': { run: () => title(unused.raw!.browser.contexts()[0].pages()[0]), between: () => relaunch('raw') },
    sandbox: { run: () => inSandbox(sandbox, wsUrl, sandboxMs) },
    'warm sandbox': { run: () => inSandbox(prepared!, unused.warm!.wsUrl, warmSandboxMs), between: prepareWarm },
    service: { run: runService },
  });

  const p = (xs: number[], q: number) => percentile(xs, q);
  console.log('');
  console.log(`raw Playwright (pre-launched headful browser, its page ready: goto, title): p50 ${ms(p(times.raw, 50))}, p95 ${ms(p(times.raw, 95))}`);
  console.log(`the same on a headless browser (not the goal's reference):    p50 ${ms(p(times['raw headless'], 50))}, p95 ${ms(p(times['raw headless'], 95))}`);
  console.log(
    `the same on a headful browser launched before the clock, unused: p50 ${ms(p(times['raw new browser'], 50))}, p95 ${ms(p(times['raw new browser'], 95))}`,
  );
  console.log(
    `sandbox alone against the reference browser, cold (a child per run): p50 ${ms(p(times.sandbox, 50))}, p95 ${ms(p(times.sandbox, 95))}; its own start (spawn to user code) p50 ${ms(p(sandboxMs, 50))}`,
  );
  console.log(
    `the same, warm (on a new browser it connected to before the clock, as a warm pair): p50 ${ms(p(times['warm sandbox'], 50))}, p95 ${ms(p(times['warm sandbox'], 95))}; its own start (run to user code) p50 ${ms(p(warmSandboxMs, 50))}`,
  );
  console.log(`service, POST run → task.completed received:                p50 ${ms(p(times.service, 50))}, p95 ${ms(p(times.service, 95))}`);
  const ratio = p(times.service, 50) / p(times.raw, 50);
  console.log(
    `ratio service / raw (p50): ${ratio.toFixed(2)}x (goal ≤ ${GOAL}x: ${ratio <= GOAL ? 'met' : 'NOT met'}); service / raw on a new browser: ${(p(times.service, 50) / p(times['raw new browser'], 50)).toFixed(2)}x; service / raw headless: ${(p(times.service, 50) / p(times['raw headless'], 50)).toFixed(2)}x`,
  );
  console.log(
    `service minus the warm sandbox alone (queue, session, CDP and traffic proxies, end, event, delivery): p50 ${ms(p(times.service, 50) - p(times['warm sandbox'], 50))}`,
  );
} finally {
  await server.stop();
  await sandbox.close();
  for (const ref of [headful, headless, unused.raw, unused.warm]) if (ref) await stopReference(ref);
  await xvfb.stop();
  rmSync(sandboxDir, { recursive: true, force: true });
  local.close();
}
