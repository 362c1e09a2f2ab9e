// No module-level mutable state shared between capabilities: what one capability tells
// another travels through the server's composition (server/server.ts: the signals object, a
// capability's provides), never through a module's globals (three process-wide listener
// registries once did). A capability reaches another only through its index.ts (the import
// rules, .dependency-cruiser.cjs), so that is where such state could be shared: an index.ts
// declares no module-level `let`, `var` or mutable collection, and no module under server/
// exports a `let` binding. Services' process-wide caches (a compiled WebAssembly module, the
// cookie-banner rules) are read-only for their users and stay.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;
// As .dependency-cruiser.cjs's `capability`: every folder of server/ but the services and the base.
const NOT_CAPABILITIES = new Set([
  'config',
  'store',
  'http',
  'auth',
  'net',
  'browser',
  'page',
  'credits',
  'outbox',
  'storage',
  'secrets',
  'sandbox',
  'llm',
  'capability',
  'testing',
]);

/** The module-level declarations of mutable state in a module's text. */
export function moduleState(text: string, { exportedOnly = false } = {}): string[] {
  const declaration = exportedOnly
    ? /^export (?:let|var) \w+/
    : /^(?:export )?(?:(?:let|var) \w+|const \w+(?:: [^=]+)? = new (?:Map|Set|WeakMap|WeakSet|EventEmitter)\b|const \w+(?:: [^=]+)? = \[\])/;
  return text.split('\n').filter((line) => declaration.test(line));
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.ts$/.test(e.name) && !/\.test(-d)?\.ts$|\.d\.ts$/.test(e.name) ? [path] : [];
  });
}

describe('state shared between capabilities', () => {
  it("is in no capability's index.ts, and no module exports a let", () => {
    const server = join(root, 'server');
    const indexes = readdirSync(server, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !NOT_CAPABILITIES.has(e.name))
      .map((e) => join(server, e.name, 'index.ts'))
      .filter((path) => {
        try {
          readFileSync(path);
          return true;
        } catch {
          return false;
        }
      });
    expect(indexes.length).toBeGreaterThan(20);
    const inIndexes = indexes.flatMap((path) => moduleState(readFileSync(path, 'utf8')).map((l) => `${relative(root, path)}: ${l}`));
    const exported = sources(server).flatMap((path) =>
      moduleState(readFileSync(path, 'utf8'), { exportedOnly: true }).map((l) => `${relative(root, path)}: ${l}`),
    );
    expect([...inIndexes, ...exported]).toEqual([]);
  });

  it('finds what it looks for', () => {
    const text = [
      'let listeners = [];',
      'const waiting = new Map<string, () => void>();',
      'const pending: string[] = [];',
      'export let current = 0;',
      'const LIMIT = 3;',
      'const NAMES = new Set(["a"]);',
      '  let local = 1;',
    ].join('\n');
    expect(moduleState(text)).toEqual([
      'let listeners = [];',
      'const waiting = new Map<string, () => void>();',
      'const pending: string[] = [];',
      'export let current = 0;',
      'const NAMES = new Set(["a"]);',
    ]);
    expect(moduleState(text, { exportedOnly: true })).toEqual(['export let current = 0;']);
  });
});
