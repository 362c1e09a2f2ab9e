// pnpm sdk-suite [--base-url URL --api-key KEY] [--json FILE]: runs the vendor's generated SDK
// tests (vendor/anchorbrowser-sdk-tests: 0.16.3's and main's) against a server, this one started on PGlite
// in a temporary folder when no URL is given, and prints each test's outcome:
//   pass         the call answered as the SDK expects;
//   placeholder  its only failure is the made-up id it was given (the tests call every
//                method on placeholder ids): a 404 for a record that does not exist here,
//                or a 400 for an id that is not even a UUID;
//   refused      a refusal this server makes on purpose, named below with its reason;
//   FAIL         anything else, a route this server does not serve included.
// Exits 1 when a test fails. Fetches nothing: the tests are in the tree, the SDK is a
// devDependency; the server's language model and proxy pool are local (suiteServices).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Server as ProxyChainServer } from 'proxy-chain';
import { startScriptedModel, type ScriptStep } from '../server/llm/scripted-server.js';
import { startChildServer } from '../server/testing/child-server.js';

export type Outcome = 'pass' | 'placeholder' | 'refused' | 'fail';

/**
 * Tests whose call this server refuses on purpose, by name, with the reason. Each refusal
 * must still be the one named: any other failure of these tests fails.
 */
export const DELIBERATE: Record<string, { answer: RegExp; reason: string }> = {
  '0.16.3/api-resources/identities.test.ts › resource identities create: only required params': {
    answer: /^400 .*credentials\/0 matches none of its forms/,
    reason: 'a credential with no field at all ({}) would sign in with nothing',
  },
  '0.16.3/api-resources/sessions/sessions.test.ts › resource sessions goto: only required params': {
    answer: /^400 .*body\/url must match format \\"uri\\"/,
    reason: "the placeholder URL 'url' is no URL",
  },
  '0.16.3/api-resources/sessions/sessions.test.ts › resource sessions goto: required and optional params': {
    answer: /^400 .*body\/url must match format \\"uri\\"/,
    reason: "the placeholder URL 'url' is no URL",
  },
  '0.16.3/api-resources/task.test.ts › resource task create: required and optional params': {
    answer: /^400 .*timeout\/max_duration must NOT be valid/,
    reason: 'a session timeout of 0 minutes (-1 disables a limit)',
  },
  '0.16.3/api-resources/task.test.ts › resource task run: required and optional params': {
    answer: /^400 .*timeout\/max_duration must NOT be valid/,
    reason: 'a session timeout of 0 minutes (-1 disables a limit)',
  },
  'main/api-resources/tasks/tasks.test.ts › resource tasks generate: required and optional params': {
    answer: /^400 .*timeout\/max_duration must NOT be valid/,
    reason: 'a session timeout of 0 minutes (-1 disables a limit)',
  },
  '0.16.3/api-resources/tools.test.ts › resource tools fetchWebpage': {
    answer: /^400 .*url is required unless a sessionId/,
    reason: 'nothing to fetch: neither a url nor a session',
  },
};

export interface SuiteResult {
  name: string;
  outcome: Outcome;
  /** The first line of the failure, when there is one. */
  reason?: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));

/** What the local model answers each perform-web-task of the suite: done at once. */
const AGENT_FINISHES: ScriptStep[] = Array.from({ length: 20 }, () => ({ toolCalls: [{ name: 'finish', arguments: { answer: 'done' } }] }));

/**
 * What the suite's server is given beside its defaults, as an operator would configure it:
 * a language model (a local scripted one, answering each task "done") for perform-web-task
 * and task generation, and a pool of one local proxy for what needs a service proxy.
 */
export async function suiteServices(): Promise<{ env: Record<string, string>; close(): Promise<void> }> {
  const model = await startScriptedModel(AGENT_FINISHES);
  const proxy = new ProxyChainServer({ port: 0, host: '127.0.0.1', verbose: false });
  await proxy.listen();
  const dir = mkdtempSync(join(tmpdir(), 'cb-sdk-suite-pool-'));
  const pool = join(dir, 'pool.yaml');
  writeFileSync(pool, `- url: "http://127.0.0.1:${proxy.port}"\n  country_code: us\n`);
  return {
    env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_MODEL: 'scripted', LLM_IMAGES: 'false', SERVICE_PROXY_POOL: pool },
    async close() {
      await model.close();
      await proxy.close(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
const suiteDir = join(root, 'vendor/anchorbrowser-sdk-tests');

/**
 * A failed test whose every failure is the SDK's NotFoundError for a record (a session,
 * profile, task... "not found"), not for a route: the id was the test's placeholder.
 */
export function classify(name: string, status: string, failures: string[]): Outcome {
  if (status === 'passed') return 'pass';
  const answers = failures.map((f) => f.split('\n')[0]!.replace(/^\S*Error: /, ''));
  if (answers.length === 0) return 'fail';
  const notFound = (a: string) => /^404 /.test(a) && !/No route for/.test(a) && /not found/i.test(a);
  const notAnId = (a: string) => /^400 .*"(path|query)\/\w+ must match format \\"uuid\\""/.test(a);
  if (answers.every((a) => notFound(a) || notAnId(a))) return 'placeholder';
  const deliberate = DELIBERATE[name];
  return deliberate && answers.every((a) => deliberate.answer.test(a)) ? 'refused' : 'fail';
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
          const name = `${file.name.slice(suiteDir.length + 1)} › ${t.fullName}`;
          const outcome = classify(name, t.status, t.failureMessages);
          const first = outcome === 'refused' ? `refused on purpose: ${DELIBERATE[name]!.reason}` : t.failureMessages[0]?.split('\n')[0];
          return { name, outcome, ...(outcome === 'pass' || !first ? {} : { reason: first }) };
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
    const services = await suiteServices();
    const server = await startChildServer({ dataDir, apiKey, env: services.env });
    baseUrl = server.url;
    stop = async () => {
      server.child.kill('SIGTERM');
      await server.exited;
      await services.close();
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
    process.stdout.write(
      `\n${results.length} tests: ${count('pass')} pass, ${count('placeholder')} fail only on a placeholder id, ${count('refused')} refused on purpose, ${count('fail')} fail\n`,
    );
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
