// TypeScript in, ES module out, with esbuild (a transform: no bundling, no type check, so
// it costs a few milliseconds). A snippet is the body of an async function: it is wrapped
// into a task module first, and the wrapper's lines are taken off every line reported.
import { createHash } from 'node:crypto';
import { transform, transformSync, type Message, type TransformOptions } from 'esbuild';
import { Lru } from '../store/lru.js';

export type CodeKind = 'task' | 'snippet';

const SNIPPET_HEAD = 'export default async function run({ page, context, browser, requestIntervention }) {\n';

/** The module to transpile and how many lines precede the user's first line. */
function wrap(code: string, kind: CodeKind): { source: string; lineOffset: number } {
  return kind === 'snippet' ? { source: `${SNIPPET_HEAD}${code}\n}\n`, lineOffset: 1 } : { source: code, lineOffset: 0 };
}

const options: TransformOptions = {
  loader: 'ts',
  format: 'esm',
  target: 'node20',
  // Inline, so the child's --enable-source-maps reports lines of the user's TypeScript.
  sourcemap: 'inline',
  sourcefile: 'user.ts',
  logLevel: 'silent',
};

export type Transpiled = { ok: true; js: string; lineOffset: number } | { ok: false; message: string; line: number };

function failure(errors: Message[], lineOffset: number, code: string): { ok: false; message: string; line: number } {
  const first = errors[0];
  const userLines = code.split('\n').length;
  // An error past the user's last line (an unclosed brace meeting the wrapper's) is theirs too.
  const raw = (first?.location?.line ?? 1) - lineOffset;
  const line = Math.min(Math.max(raw, 1), userLines);
  return { ok: false, message: first?.text ?? 'the code does not parse', line };
}

function errorsOf(err: unknown): Message[] {
  return (err as { errors?: Message[] }).errors ?? [{ text: String(err) } as Message];
}

/** Syntax check without running: the line (in the user's code) of the first error. */
export function checkTypeScript(code: string, kind: CodeKind): { ok: true } | { ok: false; message: string; line: number } {
  const { source, lineOffset } = wrap(code, kind);
  try {
    transformSync(source, { ...options, sourcemap: false });
    return { ok: true };
  } catch (err) {
    return failure(errorsOf(err), lineOffset, code);
  }
}

/** Runs of one task version transpile the same code: the last few results are kept (a
 * transform costs 1-5 ms, and more on a busy machine, on every run's way in). Big sources
 * are not kept, so the cache stays small whatever the code. */
const CACHE_MAX_SOURCE = 256 * 1024;
const cache = new Lru<string, Transpiled>(32);

export async function transpile(code: string, kind: CodeKind): Promise<Transpiled> {
  const key = code.length <= CACHE_MAX_SOURCE ? createHash('sha256').update(kind).update('\0').update(code).digest('base64') : undefined;
  const kept = key === undefined ? undefined : cache.get(key);
  if (kept) return kept;
  const out = await transpileNow(code, kind);
  if (key !== undefined) cache.set(key, out);
  return out;
}

async function transpileNow(code: string, kind: CodeKind): Promise<Transpiled> {
  const { source, lineOffset } = wrap(code, kind);
  try {
    const out = await transform(source, options);
    return { ok: true, js: out.code, lineOffset };
  } catch (err) {
    return failure(errorsOf(err), lineOffset, code);
  }
}
