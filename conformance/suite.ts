// One run of the suite: the contract, the context, every check (generic G rules and the
// modules of conformance/rules/), the selection, the run, the cleanup and the reports.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Contract } from './contract.js';
import { SuiteContext, type SuiteOptions } from './context.js';
import { early, late } from './generic/index.js';
import {
  isRuleModule,
  jsonReport,
  junitXml,
  parseSelectors,
  runChecks,
  selectChecks,
  totalsLine,
  type Check,
  type RuleModule,
  type RunReport,
} from './runner.js';

export const defaultRulesDir = fileURLToPath(new URL('./rules/', import.meta.url));

export interface SuiteRunOptions extends SuiteOptions {
  /** The contract; read from --spec, else generated/openapi.json, else openapi.yaml. */
  contract?: Contract;
  specFile?: string;
  only?: string[];
  skip?: string[];
  junitFile?: string;
  jsonFile?: string;
  rulesDir?: string;
  /** Extra modules, after those of rulesDir (tests use this). */
  modules?: RuleModule[];
  concurrency?: number;
  out?: (line: string) => void;
  /** Called with the context before the run (the CLI cleans up through it on Ctrl-C). */
  onContext?: (ctx: SuiteContext) => void;
}

export interface SuiteResult {
  report: RunReport;
  cleanup: string[];
  warnings: string[];
  exitCode: number;
}

/** The modules of a rules folder: every .ts/.js file but tests, in name order. */
export async function loadRuleModules(dir: string): Promise<RuleModule[]> {
  let files: string[];
  try {
    files = readdirSync(dir);
  } catch {
    return [];
  }
  const modules: RuleModule[] = [];
  for (const file of files.filter((f) => /\.(ts|js|mts|mjs)$/.test(f) && !/\.(test|spec|d)\.[mc]?[tj]s$/.test(f)).sort()) {
    const mod = await import(pathToFileURL(join(dir, file)).href);
    if (!isRuleModule(mod.default)) throw new Error(`${join(dir, file)} must export default defineRules(…)`);
    modules.push(mod.default);
  }
  return modules;
}

export async function buildChecks(ctx: SuiteContext, modules: RuleModule[]): Promise<Check[]> {
  const checks: Check[] = [];
  for (const m of [...early, ...modules, ...late]) checks.push(...(await m.build(ctx)));
  const seen = new Set<string>();
  for (const c of checks) {
    if (seen.has(c.name)) throw new Error(`two checks are named "${c.name}"`);
    seen.add(c.name);
  }
  return checks;
}

export async function runSuite(options: SuiteRunOptions): Promise<SuiteResult> {
  const out = options.out ?? ((line: string) => console.log(line));
  const contract = options.contract ?? Contract.fromFile(options.specFile);
  const ctx = new SuiteContext(contract, { ...options, warn: options.warn ?? ((line) => out(`warning: ${line}`)) });
  const modules = [...(await loadRuleModules(options.rulesDir ?? defaultRulesDir)), ...(options.modules ?? [])];
  const all = await buildChecks(ctx, modules);
  const only = parseSelectors(options.only);
  const skip = parseSelectors(options.skip);
  for (const s of [...only, ...skip]) {
    const re = s.endsWith('*') ? (id: string) => id.startsWith(s.slice(0, -1)) : (id: string) => id === s;
    if (!all.some((c) => re(c.id))) out(`warning: no check has the rule ID ${s}`);
  }
  const checks = selectChecks(all, only, skip);
  options.onContext?.(ctx);

  let cleanup: string[] = [];
  let report: RunReport;
  try {
    await ctx.init();
    out(
      `conformance: ${ctx.baseUrl}: ${contract.operations.length} operations, ${checks.length} of ${all.length} checks` +
        `${ctx.stateless ? ', stateless' : ''}; key: ${ctx.mainKeySource}` +
        `; admin API (${contract.adminOperations.length} operations): ${options.adminToken ? 'checked with --admin-token' : 'not checked, no --admin-token'}`,
    );
    report = await runChecks(checks, { stateless: ctx.stateless, concurrency: options.concurrency, out });
  } finally {
    cleanup = await ctx.cleanup().catch((err: Error) => [`cleanup failed: ${err.message}`]);
    for (const line of cleanup) out(line);
  }

  const meta = {
    tool: 'cloud-browser conformance',
    baseUrl: ctx.baseUrl,
    stateless: ctx.stateless,
    key: ctx.mainKeySource,
    specVersion: contract.spec.info?.version,
  };
  if (options.jsonFile) {
    writeFileSync(options.jsonFile, JSON.stringify({ ...jsonReport(report, meta), warnings: ctx.warnings, cleanup }, null, 2) + '\n');
  }
  if (options.junitFile) writeFileSync(options.junitFile, junitXml(report));
  out('');
  out(totalsLine(report.summary));
  return { report, cleanup, warnings: ctx.warnings, exitCode: report.summary.failed > 0 ? 1 : 0 };
}
