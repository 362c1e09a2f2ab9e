// A module holds one job: past 450 lines it has usually taken on a second one (the session
// hub had reached 826). A longer file says in its header, the comment it opens with, why it
// is still one thing.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;
const LIMIT = 450;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return /\.(ts|mjs)$/.test(e.name) && !/\.test(-d)?\.ts$|\.d\.ts$/.test(e.name) ? [path] : [];
  });
}

/** The comment a file opens with. */
function header(text: string): string {
  const lines = text.split('\n');
  const end = lines.findIndex((l) => !l.startsWith('//'));
  return lines.slice(0, end < 0 ? lines.length : end).join('\n');
}

describe('modules under server/', () => {
  it(`are at most ${LIMIT} lines, or say in their header why they are one thing`, () => {
    const long = sources(join(root, 'server'))
      .map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }))
      .map((f) => ({ ...f, lines: f.text.split('\n').length - (f.text.endsWith('\n') ? 1 : 0) }))
      .filter((f) => f.lines > LIMIT);
    expect(long.filter((f) => !/one thing/i.test(header(f.text))).map((f) => `${f.path}: ${f.lines} lines`)).toEqual([]);
  });

  it('reads a header as the comment lines a file opens with', () => {
    expect(header('// a\n// b\nimport x;\n// c')).toBe('// a\n// b');
    expect(header('import x;')).toBe('');
  });
});
