// `pnpm test`: everything CI checks, with progress and timings, in three lanes side by side:
//   the unit and integration tests (vitest, its files longest first on two workers);
//   the files that wait out a whole-minute limit, one at a time (vitest.config.ts, `lanes`);
//   the static checks (lint → generated/ freshness → type check → import rules), then
//   conformance against pnpm mock, then against a freshly started server on PGlite, then on
//   PostgreSQL when DATABASE_URL is set;
// then no Chromium process or browser root left behind, and nothing of the inventory lost
// (scripts/inventory.ts). The lanes share the machine: a conformance run spends most of its
// time waiting on one check after another (a browser's launch, a page, a time-out), and
// vitest's workers leave a core idle while theirs start (docs/testing.md has the figures).
// Vitest's lines come as they come; the other lanes' output is kept and shown when a step
// ends, whole only when it failed. Ends with the ten slowest test files and conformance
// runs, what failed named again (CI keeps only the tail of a long run), the wall time, and
// one line `Total: N passed, N failed, N skipped` over tests and checks.
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { readOwner } from '../server/browser/owner.js';
import { withPostgresSchema } from '../server/store/pg-schema.js';
import { freePort } from '../server/testing/free-port.js';
import { ensureServerBuild, serverCommand } from '../server/testing/server-build.js';
import { DURATIONS_FILE, type Durations } from '../server/testing/durations.js';
import { lanes } from '../vitest.config.js';
import { compare, conformanceLines, readLines, readMoved, vitestLines, type ConformanceReport, type VitestReport } from './inventory.js';

const root = new URL('..', import.meta.url).pathname;
const bin = (name: string) => join(root, 'node_modules', '.bin', name);
const totals = { passed: 0, failed: 0, skipped: 0 };
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;

/** Where a step's output goes: the terminal as it comes, or kept to be shown when it ends. */
type Out = 'inherit' | string[];

/** Runs a command to its end, its output shown as it comes or kept in `out`. */
function run(cmd: string, args: string[], out: Out = 'inherit'): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: out === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'] });
    if (out !== 'inherit') (keep(child.stdout!, out), keep(child.stderr!, out));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** Keeps a stream's lines in `out`. */
function keep(stream: NodeJS.ReadableStream, out: string[]): void {
  createInterface({ input: stream }).on('line', (line) => out.push(line));
}

const failedSteps: string[] = [];
/** Each failed test or check, with the first lines of why: printed again at the end. */
const failures: string[] = [];
const firstLines = (text: string) =>
  text
    .split('\n')
    .slice(0, 6)
    .map((l) => `    ${l.slice(0, 300)}`)
    .join('\n');

/** What ran (scripts/inventory.ts), for the check that nothing of the inventory was lost. */
const ranLines: string[] = [];
/** How long each test file and each conformance run took, for the table of the slowest. */
const durations: { what: string; seconds: number }[] = [];

/** Totals and failures from a conformance run's JSON report. */
function countConformance(label: string, file: string): void {
  const report = JSON.parse(readFileSync(file, 'utf8')) as ConformanceReport;
  ranLines.push(...conformanceLines(label, report));
  totals.passed += report.summary.passed;
  totals.failed += report.summary.failed;
  totals.skipped += report.summary.skipped;
  for (const c of report.checks.filter((c) => c.status === 'fail')) failures.push(`[${label}] ${c.id} ${c.name}\n${firstLines(c.message ?? '')}`);
}
const depcruiseArgs = ['server', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'];

/**
 * A step that reports its own counts (tests, checks) or, with counted: false, counts as one
 * check. Its output is kept and shown when it ends (the last 60 lines if it failed, none if
 * it passed), so that steps side by side do not mix their lines; `live` shows it as it comes.
 */
async function step(name: string, fn: (out: Out) => Promise<boolean>, { counted = false, live = false } = {}): Promise<void> {
  console.log(`=== [${elapsed()}] ${name}: started`);
  const t = Date.now();
  const out: Out = live ? 'inherit' : [];
  const ok = await fn(out).catch((err: Error) => {
    if (out === 'inherit') console.log(err.message);
    else out.push(err.message);
    return false;
  });
  const seconds = (Date.now() - t) / 1000;
  if (name.startsWith('conformance')) durations.push({ what: name, seconds });
  if (!ok && out !== 'inherit') console.log(out.slice(-60).join('\n'));
  console.log(`=== [${elapsed()}] ${ok ? 'ok' : 'FAILED'}: ${name} (${seconds.toFixed(1)}s)`);
  if (!ok) failedSteps.push(name);
  if (!counted) ok ? totals.passed++ : totals.failed++;
}

/** Starts the real server as a child process, runs the conformance suite against it, stops it. */
async function conformance(label: string, databaseUrl: string | undefined, out: Out): Promise<boolean> {
  const dataDir = mkdtempSync(join(tmpdir(), `cb-conformance-${label}-`));
  const port = await freePort();
  const apiKey = `sk_ci_${randomBytes(16).toString('hex')}`;
  // The admin API's rules (AD*) run only with the operator's token.
  const adminToken = `adm_ci_${randomBytes(24).toString('hex')}`;
  const base = `http://127.0.0.1:${port}`;
  const [command, args] = serverCommand();
  const server = spawn(command, args, {
    cwd: root,
    stdio: ['ignore', 'ignore', out === 'inherit' ? 'inherit' : 'pipe'],
    env: {
      ...process.env,
      PORT: String(port),
      PUBLIC_URL: base,
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl ?? '',
      BOOTSTRAP_API_KEY: apiKey,
      ADMIN_TOKEN: adminToken,
      ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'warn',
      // F10 sends requests until it sees the fetch rate limit's 429: at the default 2,000 a
      // minute, a server slowed by the lanes beside it answered 1,580 in the check's 60 s and
      // never reached it. The run's other fetches with its key number a few dozen.
      FETCH_RATE_PER_MINUTE: '300',
    },
  });
  if (out !== 'inherit') keep(server.stderr!, out);
  try {
    // Ready as a newcomer finds it a little later: answering, and its warm browser launched.
    // The first checks create a default session, which takes the pooled browser or waits for
    // its launch; on a loaded machine (the other lanes at their heaviest, load 18) that launch,
    // begun with the server's start, took more than the checks' 30 s and failed G1-G5 once.
    const pooled = process.env.BROWSER_POOL_SIZE !== '0';
    for (let i = 0; ; i++) {
      if (server.exitCode !== null) throw new Error('server exited during start');
      const health = await fetch(`${base}/healthz`).then(
        async (r) => (r.ok ? ((await r.json()) as { browsers: { warm: number } }) : undefined),
        () => undefined,
      );
      if (health && (!pooled || health.browsers.warm > 0)) break;
      // A loaded machine (the other lanes at their heaviest) has taken over a minute.
      if (i > 360) throw new Error(health ? 'the server had no warm browser in 180 s' : 'server did not answer /healthz in 180 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const report = join(dataDir, 'conformance.json');
    // G13's boundary values find a handler's 5xx, which does not depend on the store: PGlite
    // is PostgreSQL's own engine (the same types, the same range errors), so the second
    // backend would spend its minutes proving nothing more.
    const skip = label === 'postgres' ? ['--skip', 'G13'] : [];
    const code = await run(
      bin('tsx'),
      ['conformance/cli.ts', '--base-url', base, '--api-key', apiKey, '--admin-token', adminToken, '--json', report, ...skip],
      out,
    );
    countConformance(label, report);
    return code === 0;
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** pnpm mock, then the stateless conformance checks against it. What the mock and Prism
 *  print is kept and shown only when the step fails. */
async function conformanceAgainstMock(out: Out): Promise<boolean> {
  const port = await freePort();
  const mock = spawn(bin('tsx'), ['scripts/mock.ts', '--port', String(port)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const said: string[] = [];
  for (const out of [mock.stdout!, mock.stderr!]) createInterface({ input: out }).on('line', (line) => said.push(line) > 200 && said.shift());
  const dir = mkdtempSync(join(tmpdir(), 'cb-mock-'));
  try {
    const base = `http://127.0.0.1:${port}`;
    // The layer in front answers 502 until Prism is up: wait for Prism's own answer.
    for (
      let i = 0;
      !(await fetch(`${base}/v1/agent-access`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      if (mock.exitCode !== null || mock.signalCode !== null) throw new Error(`the mock ended (${mock.exitCode ?? mock.signalCode}) before answering`);
      if (i > 240) throw new Error('the mock did not answer in 120 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const report = join(dir, 'conformance.json');
    const code = await run(bin('tsx'), ['conformance/cli.ts', '--stateless', '--base-url', base, '--json', report], out);
    countConformance('mock', report);
    if (code !== 0) throw new Error(`conformance exited ${code}`);
    return true;
  } catch (err) {
    const lines = [`the mock's last lines:`, ...said.map((l) => `  ${l}`)];
    if (out === 'inherit') console.log(lines.join('\n'));
    else out.push(...lines);
    throw err;
  } finally {
    rmSync(dir, { recursive: true, force: true });
    // Prism runs under the mock script: end the whole group.
    try {
      process.kill(-mock.pid!, 'SIGTERM');
    } catch {}
  }
}

/** Chromium processes still running with a root under a temporary directory of ours. */
function leftoverBrowsers(): string[] {
  let left: string[];
  try {
    left = execFileSync('pgrep', ['-af', 'chromium.*--user-data-dir=.*cb-'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
  // Whose they are: each root's owner record names the server process that launched it, so
  // the test that left them can be found (its process, if it still runs, and its command).
  const roots = new Set(left.map((l) => /--user-data-dir=(\S+)\/user-data/.exec(l)?.[1]).filter((r): r is string => !!r));
  const owners = [...roots].map((root) => {
    const owner = readOwner(root);
    if (!owner) return `root ${root}: no owner record`;
    let cmd = 'gone';
    try {
      cmd = readFileSync(`/proc/${owner.serverPid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      // the server process has ended
    }
    return `root ${root}: session ${owner.sessionId ?? '(pool)'}, launched by pid ${owner.serverPid} (${cmd})`;
  });
  return [...owners, ...left];
}

/** Every line of scripts/inventory.txt ran, or moved to a test that ran (inventory-moved.txt). */
function inventoryKept(out: Out): boolean {
  const c = compare(readLines(join(root, 'scripts/inventory.txt')), readMoved(join(root, 'scripts/inventory-moved.txt')), ranLines);
  for (const l of c.lost) failures.push(`[inventory] no longer runs: ${l}`);
  for (const l of c.movedNowhere) failures.push(`[inventory] moved to a test that did not run: ${l}`);
  const said = `${ranLines.length} tests and checks ran: ${c.added} not in the inventory, ${c.lost.length} of it lost, ${c.movedNowhere.length} moved nowhere`;
  if (out === 'inherit') console.log(said);
  else out.push(said);
  return c.lost.length === 0 && c.movedNowhere.length === 0;
}

/** A table of the n longest durations. */
function slowest(n: number): string {
  return durations
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, n)
    .map((d) => `  ${d.seconds.toFixed(1).padStart(7)}s  ${d.what}`)
    .join('\n');
}

/** Seconds each test file took, from every vitest run of this `pnpm test`; `complete` until a
 *  run lacks its report or a file's times. */
const fileSeconds: { seconds: Durations; complete: boolean } = { seconds: {}, complete: true };

/** vitest on the given projects, its JSON report read for the counts, the failures, the
 *  inventory and the durations. */
async function vitest(args: string[], out: Out): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'cb-vitest-'));
  const report = join(dir, 'vitest.json');
  const code = await run(bin('vitest'), ['run', ...args, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], out);
  try {
    const r = JSON.parse(readFileSync(report, 'utf8')) as VitestReport;
    ranLines.push(...vitestLines(r, root));
    totals.passed += r.numPassedTests;
    totals.failed += r.numFailedTests;
    totals.skipped += r.numPendingTests + r.numTodoTests;
    for (const file of r.testResults) {
      const path = file.name.replace(root, '');
      if (file.startTime && file.endTime) {
        const s = Math.max(1, Math.round((file.endTime - file.startTime) / 1000));
        fileSeconds.seconds[path] = s;
        durations.push({ what: path, seconds: s });
      } else fileSeconds.complete = false;
      const failed = file.assertionResults.filter((a) => a.status === 'failed');
      for (const a of failed) failures.push(`[vitest] ${path} › ${a.fullName}\n${firstLines(a.failureMessages.join('\n'))}`);
      // A file that failed outside any test (an import, a hook) has no failed test to name.
      if (file.status === 'failed' && !failed.length) failures.push(`[vitest] ${path}\n${firstLines(file.message ?? '')}`);
    }
  } catch {
    fileSeconds.complete = false;
    totals.failed += 1;
    failures.push(`[vitest ${args.join(' ')}] no report was written`);
  }
  rmSync(dir, { recursive: true, force: true });
  return code === 0;
}

/** tmpfs's magic number in statfs(2). */
const TMPFS_MAGIC = 0x01021994;

/**
 * Where the run's temporary files go: /dev/shm when it is a tmpfs with room, unless TMPDIR
 * is set. Every test's DATA_DIR, PGlite copy and browser root lives under os.tmpdir(); on
 * this machine's ext4 writing them cost system CPU that a tmpfs does not (a PGlite
 * template's 40 MB copy: 0.85 CPU-s against 0.09; a browser's launch and close: 0.1 CPU-s
 * less). Not a subdirectory: Chromium's SingletonSocket sits 45 bytes below a session's
 * root, and /dev/shm/cb-<12>/<uuid> leaves 106 of a socket path's 107.
 */
function ramTmpdir(): string | undefined {
  if (process.env.TMPDIR) return undefined;
  try {
    const fs = statfsSync('/dev/shm');
    accessSync('/dev/shm', constants.W_OK);
    const freeBytes = fs.bavail * fs.bsize;
    return fs.type === TMPFS_MAGIC && freeBytes >= 4 * 2 ** 30 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}

const sortedByValue = (d: Durations): Durations => Object.fromEntries(Object.entries(d).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));

async function main() {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) console.log('(DATABASE_URL is not set: PostgreSQL runs skipped, the inventory not compared)');
  const ram = ramTmpdir();
  if (ram) process.env.TMPDIR = ram;
  console.log(`(temporary files in ${ram ? `${ram}, a tmpfs` : tmpdir()}; TMPDIR chooses another)`);
  // The server as JavaScript, for every lane's servers that run as processes of their own.
  const removeBuild = ensureServerBuild();
  // Two lanes side by side: vitest on its two workers, and beside it the static checks, then
  // the conformance runs (most of a conformance run is waiting on one check after another).
  await Promise.all([
    step('unit and integration tests (vitest)', (out) => vitest(['--project', 'shared', '--project', 'own process'], out), { counted: true, live: true }),
    // A lane of its own (vitest.config.ts, `lanes`): the files that wait out a minute, idle,
    // one at a time beside the workers (two took as long: 197 s against 196 s).
    step('tests that wait out a minute (vitest, one at a time)', (out) => vitest(['--project', 'waits', '--maxWorkers', '1'], out), { counted: true }),
    (async () => {
      await step('lint openapi.yaml (redocly)', async (out) => (await run(bin('redocly'), ['lint', 'openapi.yaml'], out)) === 0);
      await step('generated/ is fresh', async (out) => (await run(bin('tsx'), ['scripts/generate.ts', '--check'], out)) === 0);
      await step('type check (tsc, type-level tests included)', async (out) => (await run(bin('tsc'), ['--noEmit', '-p', '.'], out)) === 0);
      await step('import rules of server/: layers, no circle (dependency-cruiser)', async (out) => (await run(bin('depcruise'), depcruiseArgs, out)) === 0);
      // The whole tree, not only what changed: on CI's fresh clone nothing has changed.
      await step(
        'formatted (prettier --check; pnpm format fixes it)',
        async (out) => (await run(bin('prettier'), ['--check', '--log-level', 'warn', '.'], out)) === 0,
      );
      await step('conformance against pnpm mock (stateless checks)', conformanceAgainstMock, { counted: true });
      // One backend after the other: side by side, two servers each filling their browser limit
      // (F7: 10 recorded browsers) overloaded a 2-core machine, and creations went unanswered for 30 s.
      await step('conformance on PGlite', (out) => conformance('pglite', undefined, out), { counted: true });
      if (databaseUrl)
        await step('conformance on PostgreSQL', (out) => withPostgresSchema(databaseUrl, 'ci_conformance', (url) => conformance('postgres', url, out)), {
          counted: true,
        });
    })(),
  ]);
  removeBuild();
  // The next run's order (server/testing/sequencer.ts), from a run of every file.
  if (fileSeconds.complete) writeFileSync(DURATIONS_FILE, `${JSON.stringify(sortedByValue(fileSeconds.seconds), null, 2)}\n`);
  await step('no browser left behind', async (out) => {
    const left = leftoverBrowsers();
    if (left.length && out !== 'inherit') out.push(...left);
    return left.length === 0;
  });
  // The inventory is of the whole suite, PostgreSQL included: without it, half is not run.
  if (databaseUrl) await step('nothing of the inventory lost (scripts/inventory.txt)', async (out) => inventoryKept(out), { live: true });

  console.log(`\nThe ten slowest test files and conformance runs:\n${slowest(10)}`);
  if (failures.length) console.log(`\nWhat failed, again:\n${failures.map((f) => `  ${f}`).join('\n')}`);
  const wall = (Date.now() - started) / 1000;
  console.log(`\nFinished in ${(wall / 60).toFixed(1)} min (${wall.toFixed(0)} s).${failedSteps.length ? ` Failed steps: ${failedSteps.join('; ')}` : ''}`);
  console.log(`Total: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  process.exit(failedSteps.length ? 1 : 0);
}

await main();
