// pnpm sdk-suite [--base-url URL --api-key KEY] [--json FILE]: runs the vendor's generated SDK
// tests (vendor/anchorbrowser-sdk-tests, 0.16.3) against a server, this one started on PGlite
// in a temporary folder when no URL is given, and prints each test's outcome:
//   pass         the call answered as the SDK expects;
//   placeholder  its only failure is a 404 for a placeholder id that does not exist here
//                (the tests call every method on made-up ids), which is allowed;
//   FAIL         anything else, a route this server does not serve included.
// Exits 1 when a test fails. Fetches nothing: the tests are in the tree, the SDK is a
// devDependency.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startChildServer } from '../server/testing/child-server.js';

export type Outcome = 'pass' | 'placeholder' | 'fail';

export interface SuiteResult {
  name: string;
  outcome: Outcome;
  /** The first line of the failure, when there is one. */
  reason?: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));
const suiteDir = join(root, 'vendor/anchorbrowser-sdk-tests');

/**
 * A failed test whose every failure is the SDK's NotFoundError for a record (a session,
 * profile, task... "not found"), not for a route: the id was the test's placeholder.
 */
export function classify(status: string, failures: string[]): Outcome {
  if (status === 'passed') return 'pass';
  const placeholder = (f: string) => /^(Error|NotFoundError)?:? ?404 /.test(f.replace(/^\S*Error: /, '')) && !/No route for/.test(f) && /not found/i.test(f);
  return failures.length > 0 && failures.every(placeholder) ? 'placeholder' : 'fail';
}

interface VitestJson {
  testResults: { name: string; assertionResults: { fullName: string; status: string; failureMessages: string[] }[] }[];
}

/** Runs the suite against baseUrl; answers each test's outcome, in file order. */
export async function runSdkSuite(baseUrl: string, apiKey: string): Promise<SuiteResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cb-sdk-suite-'));
  const report = join(dir, 'report.json');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        join(root, 'node_modules/.bin/vitest'),
        ['run', '--config', join(suiteDir, 'vitest.config.ts'), '--reporter=json', `--outputFile=${report}`],
        { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, SDK_SUITE_BASE_URL: baseUrl, SDK_SUITE_API_KEY: apiKey } },
      );
      child.once('error', reject);
      child.once('exit', resolve);
    });
    let json: VitestJson;
    try {
      json = JSON.parse(readFileSync(report, 'utf8')) as VitestJson;
    } catch {
      throw new Error(`the vendor's SDK tests did not run (vitest exited ${code}, no report)`);
    }
    return json.testResults
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((file) =>
        file.assertionResults.map((t) => {
          const outcome = classify(t.status, t.failureMessages);
          const first = t.failureMessages[0]?.split('\n')[0];
          return { name: `${file.name.slice(suiteDir.length + 1)} › ${t.fullName}`, outcome, ...(outcome === 'pass' || !first ? {} : { reason: first }) };
        }),
      );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'base-url': { type: 'string' }, 'api-key': { type: 'string' }, json: { type: 'string' } } });
  let baseUrl = values['base-url'];
  let apiKey = values['api-key'] ?? process.env.SDK_SUITE_API_KEY;
  let stop = async () => {};
  if (!baseUrl) {
    const dataDir = mkdtempSync(join(tmpdir(), 'cb-sdk-suite-server-'));
    apiKey = `sk-${randomBytes(16).toString('hex')}`;
    process.stderr.write('starting the server on PGlite…\n');
    const server = await startChildServer({ dataDir, apiKey });
    baseUrl = server.url;
    stop = async () => {
      server.child.kill('SIGTERM');
      await server.exited;
      rmSync(dataDir, { recursive: true, force: true });
    };
  }
  if (!apiKey) throw new Error('--api-key (or SDK_SUITE_API_KEY) is needed with --base-url');
  try {
    process.stderr.write(`running the vendor's SDK tests against ${baseUrl}…\n`);
    const results = await runSdkSuite(baseUrl, apiKey);
    for (const r of results)
      process.stdout.write(`${r.outcome === 'fail' ? 'FAIL' : r.outcome.padEnd(4)}  ${r.name}${r.reason ? `\n      ${r.reason}` : ''}\n`);
    const count = (o: Outcome) => results.filter((r) => r.outcome === o).length;
    process.stdout.write(`\n${results.length} tests: ${count('pass')} pass, ${count('placeholder')} only a 404 for a placeholder id, ${count('fail')} fail\n`);
    if (values.json) {
      const { writeFileSync } = await import('node:fs');
      writeFileSync(values.json, JSON.stringify(results, null, 2));
    }
    process.exitCode = count('fail') > 0 ? 1 : 0;
  } finally {
    await stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
