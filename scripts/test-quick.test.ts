import { describe, expect, it } from 'vitest';
import { testsFor } from './test-quick.js';

describe('pnpm test:quick', () => {
  const tree: Record<string, string[]> = {
    'server/a': ['x.ts', 'x.test.ts', 'y.test.ts', 'test-support.ts'],
    'server/b': ['index.ts'],
  };
  const isFolder = (p: string) => p in tree;
  const list = (d: string) => tree[d] ?? [];

  it("brings the tests of a changed file's folder", () => {
    expect(testsFor('server/a/x.ts', isFolder, list)).toEqual(['server/a/x.test.ts', 'server/a/y.test.ts']);
  });
  it("brings a folder's tests, and a test file itself", () => {
    expect(testsFor('server/a', isFolder, list)).toEqual(['server/a/x.test.ts', 'server/a/y.test.ts']);
    expect(testsFor('server/a/y.test.ts', isFolder, list)).toEqual(['server/a/y.test.ts']);
  });
  it('brings nothing for a folder without tests', () => {
    expect(testsFor('server/b/index.ts', isFolder, list)).toEqual([]);
  });
});
