// `pnpm test`: everything CI checks, in order, with progress and timings:
//   lint → generated/ freshness → type check → import rules → unit and integration tests → conformance
//   against a freshly started server on PGlite, and on PostgreSQL when DATABASE_URL is set
//   → no Chromium process or browser root left behind.
// Ends with what failed, named again (CI keeps only the tail of a long run), and one line
// `Total: N passed, N failed, N skipped` over tests and checks.
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { withPostgresSchema } from '../server/store/pg-schema.js';
import { freePort } from '../server/testing/free-port.js';

const root = new URL('..', import.meta.url).pathname;
const bin = (name: string) => join(root, 'node_modules', '.bin', name);
const totals = { passed: 0, failed: 0, skipped: 0 };
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;

/** Runs a command to its end, its output shown as it comes. */
function run(cmd: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: 'inherit' });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const failedSteps: string[] = [];
/** Each failed test or check, with the first lines of why: printed again at the end. */
const failures: string[] = [];
const firstLines = (text: string) => text.split('\n').slice(0, 6).map((l) => `    ${l.slice(0, 300)}`).join('\n');

/** Totals and failures from a conformance run's JSON report. */
function countConformance(label: string, file: string): void {
  const report = JSON.parse(readFileSync(file, 'utf8')) as {
    summary: typeof totals;
    checks: { id: string; name: string; status: string; message?: string }[];
  };
  totals.passed += report.summary.passed;
  totals.failed += report.summary.failed;
  totals.skipped += report.summary.skipped;
  for (const c of report.checks.filter((c) => c.status === 'fail')) failures.push(`[${label}] ${c.id} ${c.name}\n${firstLines(c.message ?? '')}`);
}
const depcruiseArgs = ['server', '--config', '.dependency-cruiser.cjs', '--output-type', 'err'];

/** A step that reports its own counts (tests, checks) or, with counted: false, counts as one check. */
async function step(name: string, fn: () => Promise<boolean>, counted = false): Promise<void> {
  console.log(`\n=== [${elapsed()}] ${name}`);
  const t = Date.now();
  const ok = await fn().catch((err: Error) => {
    console.log(err.message);
    return false;
  });
  console.log(`=== ${ok ? 'ok' : 'FAILED'}: ${name} (${((Date.now() - t) / 1000).toFixed(1)}s)`);
  if (!ok) failedSteps.push(name);
  if (!counted) ok ? totals.passed++ : totals.failed++;
}

/** Starts the real server as a child process, runs the conformance suite against it, stops it. */
async function conformance(label: string, databaseUrl: string | undefined): Promise<boolean> {
  const dataDir = mkdtempSync(join(tmpdir(), `cb-conformance-${label}-`));
  const port = await freePort();
  const apiKey = `sk_ci_${randomBytes(16).toString('hex')}`;
  // The admin API's rules (AD*) run only with the operator's token.
  const adminToken = `adm_ci_${randomBytes(24).toString('hex')}`;
  const base = `http://127.0.0.1:${port}`;
  const server = spawn(bin('tsx'), ['server/main.ts'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
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
    },
  });
  try {
    for (let i = 0; ; i++) {
      if (server.exitCode !== null) throw new Error('server exited during start');
      if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) break;
      if (i > 120) throw new Error('server did not answer /healthz in 60 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const report = join(dataDir, 'conformance.json');
    const code = await run(bin('tsx'), ['conformance/cli.ts', '--base-url', base, '--api-key', apiKey, '--admin-token', adminToken, '--json', report]);
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
async function conformanceAgainstMock(): Promise<boolean> {
  const port = await freePort();
  const mock = spawn(bin('tsx'), ['scripts/mock.ts', '--port', String(port)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const said: string[] = [];
  for (const out of [mock.stdout!, mock.stderr!]) createInterface({ input: out }).on('line', (line) => said.push(line) > 200 && said.shift());
  const dir = mkdtempSync(join(tmpdir(), 'cb-mock-'));
  try {
    const base = `http://127.0.0.1:${port}`;
    // The layer in front answers 502 until Prism is up: wait for Prism's own answer.
    for (let i = 0; !(await fetch(`${base}/v1/agent-access`).then((r) => r.ok, () => false)); i++) {
      if (mock.exitCode !== null || mock.signalCode !== null) throw new Error(`the mock ended (${mock.exitCode ?? mock.signalCode}) before answering`);
      if (i > 240) throw new Error('the mock did not answer in 120 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const report = join(dir, 'conformance.json');
    const code = await run(bin('tsx'), ['conformance/cli.ts', '--stateless', '--base-url', base, '--json', report]);
    countConformance('mock', report);
    if (code !== 0) throw new Error(`conformance exited ${code}`);
    return true;
  } catch (err) {
    console.log(`the mock's last lines:\n${said.map((l) => `  ${l}`).join('\n')}`);
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
  try {
    return execFileSync('pgrep', ['-af', 'chromium.*--user-data-dir=.*cb-'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** The part of vitest's JSON report read here. */
interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: {
    name: string;
    status: string;
    message?: string;
    assertionResults: { fullName: string; status: string; failureMessages: string[] }[];
  }[];
}

async function main() {
  await step('lint openapi.yaml (redocly)', async () => (await run(bin('redocly'), ['lint', 'openapi.yaml'])) === 0);
  await step('generated/ is fresh', async () => (await run(bin('tsx'), ['scripts/generate.ts', '--check'])) === 0);
  await step('type check (tsc, type-level tests included)', async () => (await run(bin('tsc'), ['--noEmit', '-p', '.'])) === 0);
  await step('import rules of server/: layers, no circle (dependency-cruiser)', async () => (await run(bin('depcruise'), depcruiseArgs)) === 0);
  await step('unit and integration tests (vitest)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-vitest-'));
    const report = join(dir, 'vitest.json');
    const code = await run(bin('vitest'), ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]);
    try {
      const r = JSON.parse(readFileSync(report, 'utf8')) as VitestReport;
      totals.passed += r.numPassedTests;
      totals.failed += r.numFailedTests;
      totals.skipped += r.numPendingTests + r.numTodoTests;
      for (const file of r.testResults) {
        const path = file.name.replace(root, '');
        const failed = file.assertionResults.filter((a) => a.status === 'failed');
        for (const a of failed) failures.push(`[vitest] ${path} › ${a.fullName}\n${firstLines(a.failureMessages.join('\n'))}`);
        // A file that failed outside any test (an import, a hook) has no failed test to name.
        if (file.status === 'failed' && !failed.length) failures.push(`[vitest] ${path}\n${firstLines(file.message ?? '')}`);
      }
    } catch {
      totals.failed += 1;
      failures.push('[vitest] no report was written');
    }
    rmSync(dir, { recursive: true, force: true });
    return code === 0;
  }, true);
  await step('conformance against pnpm mock (stateless checks)', conformanceAgainstMock, true);
  // One backend after the other: side by side, two servers each filling their browser limit
  // (F7: 10 recorded browsers) overloaded a 2-core machine, and creations went unanswered for 30 s.
  await step('conformance on PGlite', () => conformance('pglite', undefined), true);
  const databaseUrl = process.env.DATABASE_URL;
  if (databaseUrl) await step('conformance on PostgreSQL', () => withPostgresSchema(databaseUrl, 'ci_conformance', (url) => conformance('postgres', url)), true);
  else console.log('\n(DATABASE_URL is not set: PostgreSQL runs skipped)');
  await step('no browser left behind', async () => {
    const left = leftoverBrowsers();
    if (left.length) console.log(left.join('\n'));
    return left.length === 0;
  });

  if (failures.length) console.log(`\nWhat failed, again:\n${failures.map((f) => `  ${f}`).join('\n')}`);
  console.log(`\nFinished in ${elapsed()}.${failedSteps.length ? ` Failed steps: ${failedSteps.join('; ')}` : ''}`);
  console.log(`Total: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  process.exit(failedSteps.length ? 1 : 0);
}

await main();
