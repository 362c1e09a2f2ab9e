// `pnpm test`: everything CI checks, in order, with progress and timings:
//   lint → generated/ freshness → type check → import rules → unit and integration tests → conformance
//   against a freshly started server on PGlite, and on PostgreSQL when DATABASE_URL is set
//   → no Chromium process or browser root left behind.
// Ends with one line `Total: N passed, N failed, N skipped` over tests and checks.
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

/** Runs a command to its end; with a label, each line it prints is prefixed by it (runs side by side). */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, label?: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, stdio: label ? ['ignore', 'pipe', 'pipe'] : 'inherit', env: { ...process.env, ...env } });
    if (label) for (const out of [child.stdout!, child.stderr!]) createInterface({ input: out }).on('line', (line) => console.log(`[${label}] ${line}`));
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const failedSteps: string[] = [];
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
    const code = await run(bin('tsx'), ['conformance/cli.ts', '--base-url', base, '--api-key', apiKey, '--admin-token', adminToken, '--json', report], {}, label);
    const summary = JSON.parse(readFileSync(report, 'utf8')).summary as typeof totals;
    totals.passed += summary.passed;
    totals.failed += summary.failed;
    totals.skipped += summary.skipped;
    return code === 0;
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** pnpm mock, then the stateless conformance checks against it. */
async function conformanceAgainstMock(): Promise<boolean> {
  const port = await freePort();
  const mock = spawn(bin('tsx'), ['scripts/mock.ts', '--port', String(port)], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], detached: true });
  try {
    const base = `http://127.0.0.1:${port}`;
    // The layer in front answers 502 until Prism is up: wait for Prism's own answer.
    for (let i = 0; !(await fetch(`${base}/v1/agent-access`).then((r) => r.ok, () => false)); i++) {
      if (i > 120) throw new Error('the mock did not answer in 60 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    const dir = mkdtempSync(join(tmpdir(), 'cb-mock-'));
    const report = join(dir, 'conformance.json');
    const code = await run(bin('tsx'), ['conformance/cli.ts', '--stateless', '--base-url', base, '--json', report]);
    const summary = JSON.parse(readFileSync(report, 'utf8')).summary as typeof totals;
    totals.passed += summary.passed;
    totals.failed += summary.failed;
    totals.skipped += summary.skipped;
    rmSync(dir, { recursive: true, force: true });
    return code === 0;
  } finally {
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
      const r = JSON.parse(readFileSync(report, 'utf8'));
      totals.passed += r.numPassedTests;
      totals.failed += r.numFailedTests;
      totals.skipped += r.numPendingTests + r.numTodoTests;
    } catch {
      totals.failed += 1;
    }
    rmSync(dir, { recursive: true, force: true });
    return code === 0;
  }, true);
  await step('conformance against pnpm mock (stateless checks)', conformanceAgainstMock, true);
  // Both backends side by side (each a server of its own): their lines are prefixed.
  const onPglite = conformance('pglite', undefined);
  const onPostgres = process.env.DATABASE_URL
    ? withPostgresSchema(process.env.DATABASE_URL, 'ci_conformance', (url) => conformance('postgres', url))
    : undefined;
  // Awaited in turn below: until then a failure must not count as unhandled.
  for (const p of [onPglite, onPostgres]) p?.catch(() => {});
  await step('conformance on PGlite', () => onPglite, true);
  if (onPostgres) await step('conformance on PostgreSQL', () => onPostgres, true);
  else console.log('\n(DATABASE_URL is not set: PostgreSQL runs skipped)');
  await step('no browser left behind', async () => {
    const left = leftoverBrowsers();
    if (left.length) console.log(left.join('\n'));
    return left.length === 0;
  });

  console.log(`\nFinished in ${elapsed()}.${failedSteps.length ? ` Failed steps: ${failedSteps.join('; ')}` : ''}`);
  console.log(`Total: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  process.exit(failedSteps.length ? 1 : 0);
}

await main();
