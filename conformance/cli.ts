// pnpm conformance --base-url URL [--api-key KEY] [--other-api-key KEY] [--admin-token T] [--only ID,ID]
//   [--skip ID] [--junit FILE] [--json FILE] [--stateless] [--fixtures-url URL]
//   [--timeout-ms N] [--fuzz N] [--seed S] [--spec FILE] [--list]
import { parseArgs } from 'node:util';
import { Contract } from './contract.js';
import { SuiteContext } from './context.js';
import { buildChecks, defaultRulesDir, loadRuleModules, runSuite } from './suite.js';
import { parseSelectors, selectChecks } from './runner.js';

const usage = `Usage: pnpm conformance --base-url URL [options]

  --base-url URL        the server under test (env CONFORMANCE_BASE_URL)
  --api-key KEY         the project's key (env CONFORMANCE_API_KEY); without one the
                        suite asks agent access for a key, or under --stateless sends a
                        placeholder
  --other-api-key KEY   another project's key, for G11 (env CONFORMANCE_OTHER_API_KEY);
                        without one the suite asks agent access for one
  --admin-token TOKEN   the server's ADMIN_TOKEN (env CONFORMANCE_ADMIN_TOKEN), for the
                        admin API's rules (AD*); without it they are skipped: the admin
                        API is the operator's, and answers 404 when it is off
  --only ID,ID          run only these rule IDs (G4, S1, or a family: G*)
  --skip ID             skip these rule IDs (repeatable, comma-separated)
  --junit FILE          write a JUnit XML report
  --json FILE           write a JSON report
  --stateless           against a mock (pnpm mock): skip the checks that need keys and
                        resources ("stateful: needs a real implementation")
  --fixtures-url URL    the fixture server's address as the server under test reaches
                        it; the suite listens on that port (default: 127.0.0.1, any port)
  --timeout-ms N        time limit of one request (default 30000; requests that must be
                        refused at once wait at most 10000)
  --fuzz N              G12's hostile cases an operation (default 2; more for a longer run)
  --seed S              the seed that picks G12's cases (default 1; a failure names its seed)
  --spec FILE           the contract (default generated/openapi.json, else openapi.yaml)
  --list                print the checks and exit
`;

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${usage}`);
  process.exit(2);
}

let args: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    args: process.argv.slice(2),
    options: {
      'base-url': { type: 'string' },
      'api-key': { type: 'string' },
      'other-api-key': { type: 'string' },
      'admin-token': { type: 'string' },
      only: { type: 'string', multiple: true },
      skip: { type: 'string', multiple: true },
      junit: { type: 'string' },
      json: { type: 'string' },
      stateless: { type: 'boolean', default: false },
      'fixtures-url': { type: 'string' },
      'timeout-ms': { type: 'string' },
      fuzz: { type: 'string' },
      seed: { type: 'string' },
      spec: { type: 'string' },
      list: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    allowPositionals: false,
  });
}
try {
  args = parse();
} catch (err) {
  fail((err as Error).message);
}
const v = args.values;
if (v.help) {
  process.stdout.write(usage);
  process.exit(0);
}

const baseUrl = v['base-url'] ?? process.env.CONFORMANCE_BASE_URL;
const timeoutMs = v['timeout-ms'] === undefined ? 30_000 : Number(v['timeout-ms']);
if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) fail(`--timeout-ms must be a positive integer, not ${v['timeout-ms']}`);
const fuzzCases = v.fuzz === undefined ? 2 : Number(v.fuzz);
if (!Number.isInteger(fuzzCases) || fuzzCases < 0) fail(`--fuzz must be a whole number, not ${v.fuzz}`);
const fuzzSeed = v.seed === undefined ? 1 : Number(v.seed);
if (!Number.isInteger(fuzzSeed)) fail(`--seed must be an integer, not ${v.seed}`);
for (const [name, value] of [
  ['--base-url', baseUrl],
  ['--fixtures-url', v['fixtures-url']],
] as const) {
  if (value !== undefined && !/^https?:\/\/[^/]+/.test(value)) fail(`${name} must be an http(s) URL, not ${value}`);
}

if (v.list) {
  const contract = Contract.fromFile(v.spec);
  const ctx = new SuiteContext(contract, { baseUrl: baseUrl ?? 'http://localhost', stateless: v.stateless });
  const all = await buildChecks(ctx, await loadRuleModules(defaultRulesDir));
  for (const c of selectChecks(all, parseSelectors(v.only), parseSelectors(v.skip))) {
    console.log(`${c.name}${c.stateful ? '  [stateful]' : ''}`);
  }
  process.exit(0);
}
if (!baseUrl) fail('--base-url is required');

let ctx: SuiteContext | undefined;
let interrupted = false;
process.once('SIGINT', () => {
  interrupted = true;
  console.log('\ninterrupted: cleaning up what the run created (Ctrl-C again to stop at once)');
  process.once('SIGINT', () => process.exit(130));
  void (ctx?.cleanup() ?? Promise.resolve([])).then((lines) => lines.forEach((l) => console.log(l))).finally(() => process.exit(130));
});

try {
  const result = await runSuite({
    baseUrl,
    apiKey: v['api-key'] ?? process.env.CONFORMANCE_API_KEY,
    otherApiKey: v['other-api-key'] ?? process.env.CONFORMANCE_OTHER_API_KEY,
    adminToken: v['admin-token'] ?? process.env.CONFORMANCE_ADMIN_TOKEN,
    stateless: v.stateless,
    fixturesUrl: v['fixtures-url'],
    timeoutMs,
    fuzzCases,
    fuzzSeed,
    specFile: v.spec,
    only: v.only,
    skip: v.skip,
    junitFile: v.junit,
    jsonFile: v.json,
    onContext: (c) => (ctx = c),
  });
  if (!interrupted) process.exit(result.exitCode);
} catch (err) {
  console.error(`conformance: ${(err as Error).stack ?? err}`);
  process.exit(2);
}
