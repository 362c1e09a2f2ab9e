// No module-level mutable state shared between capabilities: what one capability tells
// another travels through the server's composition (server/server.ts: the signals object, a
// capability's provides), never through a module's globals. Three process-wide listener
// registries once did (sessions/end-recorded.ts, outbox/nudge.ts, outbox/attempted.ts): two
// servers in one process heard each other, and server.ts did not show who waited for whom.
// They sat in internal modules, one of them in a service, so every module is read, not only
// a capability's index.ts: state anywhere below the assembly is shared by whoever imports it.
//
// The modules read are those .dependency-cruiser.cjs places in the base, the services or a
// capability (its rules' own patterns, so a new folder is read without being listed here),
// minus its tests and their support. In each, module-level mutable state is:
//   - a top-level `let` or `var`, whatever it holds: it is there to be reassigned;
//   - a top-level `const` whose value a function of the module changes: a mutating method
//     called on it (set, add, push, delete, on, ...), a property or element of it assigned,
//     incremented or deleted, or Object.assign onto it; through a chain too
//     (`waiters.get(id).add(done)`). Changes made while the module loads (a lookup table
//     filled by a top-level loop) are not state: they are done before any importer runs.
// A name is the module's unless a scope around its use declares it again (a function's own
// `seen` is not the module's `seen`). What a helper mutates after being handed the value is not
// seen; no registry here has been written that way.
// The allow-list names each process-wide value that stays, with why it is not the word
// between capabilities: a read-only cache of something the process loads once, or state of a
// process that is not the server's.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;

// Each allowed module-level value (`path: name`, or `path` for all of a module's), and why it
// may stay. None carries word from one capability to another.
const ALLOWED: Record<string, string> = {
  // Read-only for their users: something the process loads or computes once, the same for any server.
  'server/http/spec.ts: cached': 'generated/openapi.json, parsed once',
  'server/http/app.ts: ajvs': "the Ajv instances compiled from that spec, made at the first request's validation",
  'server/http/app.ts: compiled': "an operation's request validators, compiled from the spec once",
  'server/page/consent.ts: loaded': "autoconsent's script and rules, read from the package once",
  'server/page/consent.ts: rulesCache': 'those rules filtered by frame kind and URL: a pure function of its key, bounded',
  'server/sandbox/bundle.ts: bundled': "the sandbox child's bootstrap, bundled once from runner.ts",
  'server/sandbox/jail.ts: playwrightDir': "playwright-core's installed folder, resolved once",
  'server/sandbox/transpile.ts: cache': "esbuild's output by hash of the code: a pure function of its key, bounded (Lru)",
  'server/store/pglite-thread.ts: compiled': "PGlite's WebAssembly, compiled once and handed to each database's thread",
  'server/recording/encode.ts: capabilities': 'what an ffmpeg executable can do, asked once per path',
  'server/browser/launch.ts: insetsCache': "a Chromium binary's window insets, measured once per binary and mode",
  'server/browser/adblock.ts: indexed': "the ad-block's rules indexed once per Chromium binary (preindexed.ts), or why they could not be",
  'server/browser/procfs.ts: self': "this process's identity (pid, start time, boot id), which it keeps for life",
  // The process's own: what must hold across every server the process runs.
  'server/browser/launch.ts: live': "this process's browsers, killed by its one 'exit' hook whichever server started them",
  'server/browser/launch.ts: exitHookInstalled': "that 'exit' hook, installed once for the process",
  'server/browser/reaper.ts: reaper': "the shell that kills the process's frozen browsers when the process ends",
  'server/sandbox/jail.ts: nextUid': 'uids handed to runs: two runs of the process, whichever server, must not share one',
  'server/browser/browser-user.ts: nextUid': 'uids handed to browsers: two browsers of the process, whichever server, must not share one',
  'server/events/delivery-claim.ts: localLeasesOf':
    "PGlite's delivery leases kept in memory, keyed by the database: they are the database's, whoever claims from it",
  // Modules of other processes, which the server never loads: their state is their process's.
  'server/sandbox/child/runner.ts': "the sandbox child's bootstrap, one process per run",
  'server/store/pglite-worker.mjs': "a PGlite database's worker thread, which loads the module for itself",
};

interface Rule {
  name: string;
  from: { path?: string | string[]; pathNot?: string | string[] };
}

/** The patterns of the layers below the assembly and of the tests, as the import rules say. */
function layers(): { layers: RegExp[]; tests: RegExp } {
  const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as { forbidden: Rule[] };
  const from = (name: string) => {
    const rule = config.forbidden.find((r) => r.name === name);
    if (!rule) throw new Error(`.dependency-cruiser.cjs has no rule ${name}`);
    return rule.from;
  };
  const one = (p: string | string[] | undefined) => {
    if (typeof p !== 'string') throw new Error(`expected one pattern, got ${JSON.stringify(p)}`);
    return new RegExp(p);
  };
  return {
    layers: ['base-imports-base', 'services-below-capabilities', 'capability-through-index'].map((name) => one(from(name).path)),
    tests: one(from('base-imports-base').pathNot),
  };
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|mjs)$/.test(e.name) && !/\.d\.ts$/.test(e.name) ? [path] : [];
  });
}

const MUTATORS = new Set([
  // Map, Set, WeakMap, WeakSet, Array and caches like them
  ...['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin'],
  // EventEmitter and EventTarget
  ...['on', 'once', 'off', 'addListener', 'prependListener', 'removeListener', 'removeAllListeners', 'addEventListener', 'removeEventListener'],
]);

/** The identifier a chain of property reads and method calls starts from (`a` of `a.b.get(c).d`). */
function chainRoot(node: ts.Expression): ts.Identifier | undefined {
  for (;;) {
    if (ts.isIdentifier(node)) return node;
    if (ts.isParenthesizedExpression(node) || ts.isNonNullExpression(node) || ts.isAsExpression(node)) node = node.expression;
    else if (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node)) node = node.expression;
    else if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) node = node.expression.expression;
    else return undefined;
  }
}

/** What a node changes, if it changes a value reached from an identifier: that identifier. */
function mutated(node: ts.Node): ts.Identifier | undefined {
  const member = (e: ts.Expression) => {
    const inner = ts.skipPartiallyEmittedExpressions(e);
    return ts.isPropertyAccessExpression(inner) || ts.isElementAccessExpression(inner) ? chainRoot(inner) : undefined;
  };
  if (ts.isBinaryExpression(node) && node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment && node.operatorToken.kind <= ts.SyntaxKind.LastAssignment)
    return member(node.left);
  if (
    (ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) &&
    [ts.SyntaxKind.PlusPlusToken, ts.SyntaxKind.MinusMinusToken].includes(node.operator)
  )
    return member(node.operand);
  if (ts.isDeleteExpression(node)) return member(node.expression);
  if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
    const callee = node.expression;
    if (ts.isIdentifier(callee.expression) && callee.expression.text === 'Object' && ['assign', 'defineProperty'].includes(callee.name.text))
      return node.arguments[0] && chainRoot(node.arguments[0]);
    if (MUTATORS.has(callee.name.text)) return chainRoot(callee.expression);
  }
  return undefined;
}

/** Whether code at `node` runs after its module has loaded: it is inside a function or a class member. */
function later(node: ts.Node): boolean {
  for (let n = node.parent; n; n = n.parent) {
    if (ts.isFunctionLike(n) || ts.isPropertyDeclaration(n)) return true;
  }
  return false;
}

function names(name: ts.BindingName): string[] {
  if (ts.isIdentifier(name)) return [name.text];
  return name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : names(e.name)));
}

/** The names a node declares for the code inside it (a block's, a function's, a loop's, a catch's). */
function declared(node: ts.Node): string[] {
  const list = (l: ts.VariableDeclarationList) => l.declarations.flatMap((d) => names(d.name));
  if (ts.isSourceFile(node) || ts.isBlock(node) || ts.isModuleBlock(node) || ts.isCaseClause(node) || ts.isDefaultClause(node))
    return node.statements.flatMap((s) => {
      if (ts.isVariableStatement(s)) return list(s.declarationList);
      if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s)) && s.name) return [s.name.text];
      return [];
    });
  if (ts.isFunctionLike(node))
    return [...node.parameters.flatMap((p) => names(p.name)), ...(ts.isFunctionExpression(node) && node.name ? [node.name.text] : [])];
  if ((ts.isForStatement(node) || ts.isForInStatement(node) || ts.isForOfStatement(node)) && node.initializer && ts.isVariableDeclarationList(node.initializer))
    return list(node.initializer);
  if (ts.isCatchClause(node) && node.variableDeclaration) return names(node.variableDeclaration.name);
  return [];
}

/** Whether `id` names its module's own top-level binding: no scope around it declares the name. */
function moduleLevel(id: ts.Identifier): boolean {
  for (let n = id.parent; !ts.isSourceFile(n); n = n.parent) {
    if (declared(n).includes(id.text)) return false;
  }
  return true;
}

/** The module-level mutable state of each module, as `path:line: name (why)`. */
export function moduleState(files: Record<string, string>): string[] {
  return Object.entries(files).flatMap(([path, text]) => {
    const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, path.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS);
    const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart()).line + 1;
    const found: string[] = [];
    const consts = new Map<string, number>();
    for (const statement of sf.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      const flags = statement.declarationList.flags;
      const kind = flags & ts.NodeFlags.Let ? 'let' : flags & ts.NodeFlags.Const ? 'const' : 'var';
      for (const d of statement.declarationList.declarations)
        for (const name of names(d.name)) {
          if (kind === 'const') consts.set(name, line(d));
          else found.push(`${path}:${line(d)}: ${name} (${kind})`);
        }
    }
    const changed = new Set<string>();
    const visit = (node: ts.Node) => {
      const id = mutated(node);
      if (id && consts.has(id.text) && later(node) && moduleLevel(id)) changed.add(id.text);
      ts.forEachChild(node, visit);
    };
    visit(sf);
    for (const name of changed) found.push(`${path}:${consts.get(name)}: ${name} (changed by a function)`);
    return found.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  });
}

describe('state shared between capabilities', () => {
  it('is in no module below the assembly, but for the allowed caches', () => {
    const { layers: below, tests } = layers();
    const paths = sources(join(root, 'server'))
      .map((path) => relative(root, path))
      .filter((path) => below.some((p) => p.test(path)) && !tests.test(path));
    expect(paths.length).toBeGreaterThan(200);
    const state = moduleState(Object.fromEntries(paths.map((path) => [path, readFileSync(join(root, path), 'utf8')])));
    const allows = (key: string, line: string) => {
      const [, path, name] = /^(.*?):\d+: (\S+) /.exec(line)!;
      return key === path || key === `${path}: ${name}`;
    };
    expect(state.filter((line) => !Object.keys(ALLOWED).some((key) => allows(key, line)))).toEqual([]);
    // An allowance whose value has gone goes too.
    expect(Object.keys(ALLOWED).filter((key) => !state.some((line) => allows(key, line)))).toEqual([]);
  });

  it('finds what it looks for', () => {
    const text = [
      'let listeners = [];',
      'var count = 0, [first] = [];',
      'export let current = 0;',
      'const waiting = new Map<string, () => void>();',
      'export function wait(id: string, done: () => void) { waiting.set(id, done); }',
      'const sets = new Map<string, Set<() => void>>();',
      'export const on = (id: string, l: () => void) => sets.get(id)!.add(l);',
      'const state = { n: 0 };',
      'export function bump() { state.n++; }',
      'const LIMIT = 3;',
      'const NAMES = new Set(["a"]);',
      'for (const n of ["b"]) NAMES.add(n);',
      'const seen = new Set<string>();',
      'export function f() { const seen = new Set<string>(); seen.add("x"); let local = 1; return local; }',
      'const byParam = new Set<string>();',
      'export function g(byParam: string[]) { byParam.push("y"); try {} catch (read) { read.x = 1; } }',
      'const read = new Map<string, number>();',
      'export const get = (k: string) => read.get(k);',
    ].join('\n');
    expect(moduleState({ 'm.ts': text })).toEqual([
      'm.ts:1: listeners (let)',
      'm.ts:2: count (var)',
      'm.ts:2: first (var)',
      'm.ts:3: current (let)',
      'm.ts:4: waiting (changed by a function)',
      'm.ts:6: sets (changed by a function)',
      'm.ts:8: state (changed by a function)',
    ]);
  });
});
