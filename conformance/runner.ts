// Named checks, run one after the other (or a few at a time when a check says it may run
// alongside others), a line each as it completes, the totals, and JUnit / JSON reports.
//
// A check's name starts with its rule ID ("G4 createSession JSON body validates"), so a
// report line maps back to docs/conformance-rules.md. A check asserts through `t`; one
// that ends without asserting anything fails, because a check that cannot fail is a defect.
import type { SuiteContext } from './context.js';

export type CheckStatus = 'pass' | 'fail' | 'skip';

export const STATEFUL_REASON = 'stateful: needs a real implementation';

export interface T {
  /** Fails the check with `message` unless `condition` holds. */
  assert(condition: unknown, message: string): asserts condition;
  /** Fails unless the two values are deeply equal (JSON semantics). */
  equal(actual: unknown, expected: unknown, message: string): void;
  fail(message: string): never;
  skip(reason: string): never;
  /** A line shown with the result, e.g. the exchange a passing check looked at. */
  note(line: string): void;
}

export interface Check {
  /** The rule ID: the first word of the name. */
  id: string;
  name: string;
  /** Needs a real implementation (keys, resources, state): skipped under --stateless. */
  stateful: boolean;
  /** May run concurrently with neighbouring parallel checks (its requests change nothing). */
  parallel: boolean;
  run(t: T): Promise<void> | void;
}

export interface CheckOptions {
  /** Default true: a rule holds on a real implementation unless it says otherwise. */
  stateful?: boolean;
  parallel?: boolean;
}

export function check(name: string, run: (t: T) => Promise<void> | void, options: CheckOptions = {}): Check {
  const id = name.split(/\s+/)[0];
  if (!/^[A-Z]+[0-9]+$/.test(id)) throw new Error(`a check's name starts with its rule ID (G1, S4, …): "${name}"`);
  return { id, name, stateful: options.stateful ?? true, parallel: options.parallel ?? false, run };
}

/** A module of checks under conformance/rules/ (or generic/): `export default defineRules((ctx) => [check(…), …])`. */
export interface RuleModule {
  readonly kind: 'rules';
  build(ctx: SuiteContext): Check[] | Promise<Check[]>;
}

export function defineRules(build: (ctx: SuiteContext) => Check[] | Promise<Check[]>): RuleModule {
  return { kind: 'rules', build };
}

export function isRuleModule(value: unknown): value is RuleModule {
  return !!value && typeof value === 'object' && (value as RuleModule).kind === 'rules' && typeof (value as RuleModule).build === 'function';
}

export class Skip extends Error {}
export class Failure extends Error {}

export interface CheckResult {
  id: string;
  name: string;
  status: CheckStatus;
  /** Why it failed or was skipped. */
  message?: string;
  notes: string[];
  durationMs: number;
}

export interface Summary {
  passed: number;
  failed: number;
  skipped: number;
}

export interface RunReport {
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  results: CheckResult[];
  summary: Summary;
}

export interface RunOptions {
  stateless?: boolean;
  /** How many parallel checks may be in flight at once (default 6). */
  concurrency?: number;
  /** Receives one line per completed check. */
  out?: (line: string) => void;
}

/** Rule IDs, comma-separated or repeated; `G*` selects a family. */
export function parseSelectors(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim().toUpperCase())
    .filter(Boolean);
}

function matches(selector: string, id: string): boolean {
  return selector.endsWith('*') ? id.startsWith(selector.slice(0, -1)) : id === selector;
}

export function selectChecks(checks: Check[], only: string[], skip: string[]): Check[] {
  return checks.filter((c) => (only.length === 0 || only.some((s) => matches(s, c.id))) && !skip.some((s) => matches(s, c.id)));
}

export async function runCheck(c: Check, options: Pick<RunOptions, 'stateless'> = {}): Promise<CheckResult> {
  const started = performance.now();
  const notes: string[] = [];
  const done = (status: CheckStatus, message?: string): CheckResult => ({
    id: c.id,
    name: c.name,
    status,
    message,
    notes,
    durationMs: Math.round(performance.now() - started),
  });
  if (c.stateful && options.stateless) return done('skip', STATEFUL_REASON);
  let assertions = 0;
  const t: T = {
    assert(condition, message) {
      assertions++;
      if (!condition) throw new Failure(message);
    },
    equal(actual, expected, message) {
      assertions++;
      const diff = firstDifference(actual, expected);
      if (diff) throw new Failure(`${message}: ${diff}`);
    },
    fail(message) {
      assertions++;
      throw new Failure(message);
    },
    skip(reason) {
      throw new Skip(reason);
    },
    note(line) {
      notes.push(line);
    },
  };
  try {
    await c.run(t);
    if (assertions === 0) return done('fail', 'the check asserted nothing (a check that cannot fail is a defect)');
    return done('pass');
  } catch (err) {
    if (err instanceof Skip) return done('skip', err.message);
    if (err instanceof Failure) return done('fail', err.message);
    return done('fail', `the check threw: ${(err as Error)?.stack ?? String(err)}`);
  }
}

export function formatResult(r: CheckResult, index: number, total: number): string {
  const width = String(total).length;
  const tag = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' }[r.status];
  const detail = r.status === 'pass' ? r.notes.join('; ') : (r.message ?? '');
  const lines = detail.split('\n');
  const head = `[${String(index).padStart(width)}/${total}] ${tag} ${r.name}${lines[0] ? ` — ${lines[0]}` : ''} (${r.durationMs} ms)`;
  const rest = lines.slice(1).map((l) => `      ${l}`);
  const notes = r.status === 'fail' && r.notes.length ? r.notes.map((n) => `      note: ${n}`) : [];
  return [head, ...rest, ...notes].join('\n');
}

export function totalsLine(s: Summary): string {
  return `${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped`;
}

function limiter(concurrency: number) {
  let active = 0;
  const queue: (() => void)[] = [];
  return <R>(fn: () => Promise<R>): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      const start = () => {
        active++;
        fn()
          .then(resolve, reject)
          .finally(() => {
            active--;
            queue.shift()?.();
          });
      };
      if (active < concurrency) start();
      else queue.push(start);
    });
}

export async function runChecks(checks: Check[], options: RunOptions = {}): Promise<RunReport> {
  const out = options.out ?? ((line: string) => console.log(line));
  const startedAt = new Date();
  const results: CheckResult[] = [];
  const limit = limiter(Math.max(1, options.concurrency ?? 6));
  let i = 0;
  while (i < checks.length) {
    let j = i + 1;
    if (checks[i].parallel) while (j < checks.length && checks[j].parallel) j++;
    const group = checks.slice(i, j);
    const pending = group.length > 1 ? group.map((c) => limit(() => runCheck(c, options))) : undefined;
    for (let k = 0; k < group.length; k++) {
      const r = pending ? await pending[k] : await runCheck(group[k], options);
      results.push(r);
      out(formatResult(r, results.length, checks.length));
    }
    i = j;
  }
  const finishedAt = new Date();
  return {
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    durationMs: finishedAt.getTime() - startedAt.getTime(),
    results,
    summary: summarize(results),
  };
}

export function summarize(results: CheckResult[]): Summary {
  return {
    passed: results.filter((r) => r.status === 'pass').length,
    failed: results.filter((r) => r.status === 'fail').length,
    skipped: results.filter((r) => r.status === 'skip').length,
  };
}

// ---------------------------------------------------------------------------------------
// Comparison

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** undefined when equal (JSON semantics, object key order ignored), else where they first differ. */
export function firstDifference(actual: unknown, expected: unknown, at = ''): string | undefined {
  if (Object.is(actual, expected)) return undefined;
  const where = at || '(root)';
  const show = (v: unknown) => {
    const s = JSON.stringify(canonical(v)) ?? String(v);
    return s.length > 120 ? `${s.slice(0, 120)}…` : s;
  };
  if (Array.isArray(actual) && Array.isArray(expected)) {
    for (let i = 0; i < Math.max(actual.length, expected.length); i++) {
      if (i >= actual.length || i >= expected.length) return `${where}: ${actual.length} items, expected ${expected.length}`;
      const d = firstDifference(actual[i], expected[i], `${at}/${i}`);
      if (d) return d;
    }
    return undefined;
  }
  if (actual && expected && typeof actual === 'object' && typeof expected === 'object' && !Array.isArray(actual) && !Array.isArray(expected)) {
    const a = actual as Record<string, unknown>;
    const e = expected as Record<string, unknown>;
    for (const k of new Set([...Object.keys(a), ...Object.keys(e)])) {
      if (!(k in a)) return `${at}/${k}: missing, expected ${show(e[k])}`;
      if (!(k in e)) return `${at}/${k}: ${show(a[k])}, expected no such field`;
      const d = firstDifference(a[k], e[k], `${at}/${k}`);
      if (d) return d;
    }
    return undefined;
  }
  return `${where}: ${show(actual)}, expected ${show(expected)}`;
}

// ---------------------------------------------------------------------------------------
// Reports

function xml(s: string): string {
  return (
    s
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
  );
}

/** JUnit XML: one <testsuite> a rule ID, one <testcase> a check. */
export function junitXml(report: RunReport, suiteName = 'conformance'): string {
  const byRule = new Map<string, CheckResult[]>();
  for (const r of report.results) byRule.set(r.id, [...(byRule.get(r.id) ?? []), r]);
  const secs = (ms: number) => (ms / 1000).toFixed(3);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(suiteName)}" tests="${report.results.length}" failures="${report.summary.failed}" skipped="${report.summary.skipped}" errors="0" time="${secs(report.durationMs)}" timestamp="${report.startedAt}">`,
  ];
  for (const [id, results] of byRule) {
    const s = summarize(results);
    const time = results.reduce((a, r) => a + r.durationMs, 0);
    lines.push(
      `  <testsuite name="${xml(`${suiteName}.${id}`)}" tests="${results.length}" failures="${s.failed}" skipped="${s.skipped}" errors="0" time="${secs(time)}">`,
    );
    for (const r of results) {
      const open = `    <testcase classname="${xml(`${suiteName}.${id}`)}" name="${xml(r.name)}" time="${secs(r.durationMs)}"`;
      const notes = r.notes.length ? `\n      <system-out>${xml(r.notes.join('\n'))}</system-out>` : '';
      if (r.status === 'pass') lines.push(notes ? `${open}>${notes}\n    </testcase>` : `${open}/>`);
      else if (r.status === 'skip') lines.push(`${open}>\n      <skipped message="${xml(r.message ?? '')}"/>${notes}\n    </testcase>`);
      else {
        const first = (r.message ?? '').split('\n')[0];
        lines.push(`${open}>\n      <failure message="${xml(first)}" type="${xml(r.id)}">${xml(r.message ?? '')}</failure>${notes}\n    </testcase>`);
      }
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return lines.join('\n') + '\n';
}

export function jsonReport(report: RunReport, meta: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...meta,
    startedAt: report.startedAt,
    finishedAt: report.finishedAt,
    durationMs: report.durationMs,
    summary: report.summary,
    checks: report.results.map((r) => ({
      id: r.id,
      name: r.name,
      status: r.status,
      ...(r.message !== undefined ? { message: r.message } : {}),
      ...(r.notes.length ? { notes: r.notes } : {}),
      durationMs: r.durationMs,
    })),
  };
}
