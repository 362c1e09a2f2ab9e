// The transform of user code: modules and snippets, the lines of syntax errors, and the
// results kept for code run again (by code and kind: the same text as a snippet is wrapped).
import { describe, expect, it } from 'vitest';
import { transpile } from './transpile.js';

describe('transpile', () => {
  it('answers the same module for the same code, and tells a snippet from a task by its wrapping', async () => {
    const code = 'const n: number = 1;\nexport default async function run() { return n; }\n';
    const first = await transpile(code, 'task');
    expect(first).toMatchObject({ ok: true, lineOffset: 0 });
    expect(await transpile(code, 'task')).toEqual(first);
    // The same text as a task (a module) and as a snippet (a function's body).
    const text = 'const n: number = 2;\n';
    const asTask = await transpile(text, 'task');
    const asSnippet = await transpile(text, 'snippet');
    expect(asTask).toMatchObject({ ok: true, lineOffset: 0 });
    expect(asTask.ok && asTask.js).not.toContain('requestIntervention');
    expect(asSnippet).toMatchObject({ ok: true, lineOffset: 1 });
    expect(asSnippet.ok && asSnippet.js).toContain('run as default');
    // Another code is another module, however recently the first was made.
    const other = await transpile(code.replace('= 1', '= 3'), 'task');
    expect(other.ok && other.js).toContain('3');
    expect(other.ok && other.js).not.toContain('= 1');
  });

  it('names the line of a syntax error, each time', async () => {
    const bad = 'export default async function run() {\n  return 1 +;\n}\n';
    expect(await transpile(bad, 'task')).toMatchObject({ ok: false, line: 2 });
    expect(await transpile(bad, 'task')).toMatchObject({ ok: false, line: 2 });
    expect(await transpile('return 1 +;', 'snippet')).toMatchObject({ ok: false, line: 1 });
  });

  it('keeps a bounded number of results, each code still transpiled to its own module', async () => {
    const codes = Array.from({ length: 40 }, (_, i) => `export default async function run() { return ${i}; }\n`);
    for (const c of codes) await transpile(c, 'task');
    // All still transpile to their own module, kept or made again.
    for (const [i, c] of codes.entries()) {
      const out = await transpile(c, 'task');
      expect(out.ok && out.js).toContain(`return ${i};`);
    }
  });
});
