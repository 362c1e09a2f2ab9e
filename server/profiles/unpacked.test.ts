// The node's cache of unpacked profile versions, on the real file system: one unpack for any
// number of sessions starting at once, a failed unpack leaves nothing and is tried again, a
// forgotten version goes once no copy reads it, and the least recently used go past the cap.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../browser/test-support.js';
import { UnpackedProfiles } from './unpacked.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function temp(): string {
  const d = mkdtempSync(join(tmpdir(), 'cb-unpacked-'));
  dirs.push(d);
  return d;
}

describe('UnpackedProfiles', () => {
  it('unpacks a version once for sessions starting together, and each gets its own copy', async () => {
    const base = temp();
    const cache = new UnpackedProfiles(join(base, 'cache'));
    let unpacks = 0;
    const unpack = async (dir: string) => {
      unpacks++;
      // A fake unpack that takes a while, the other copies asked for while it runs: not a wait.
      await new Promise((r) => setTimeout(r, 50));
      mkdirSync(join(dir, 'Default'), { recursive: true });
      writeFileSync(join(dir, 'Default', 'Cookies'), 'v1');
    };
    await Promise.all([1, 2, 3].map((i) => cache.copyTo('v1', join(base, `root${i}`), unpack)));
    expect(unpacks).toBe(1);
    for (const i of [1, 2, 3]) expect(readFileSync(join(base, `root${i}`, 'Default', 'Cookies'), 'utf8')).toBe('v1');
    // A copy is the session's own: writing it leaves the cache as it was.
    writeFileSync(join(base, 'root1', 'Default', 'Cookies'), 'changed');
    await cache.copyTo('v1', join(base, 'root4'), unpack);
    expect(readFileSync(join(base, 'root4', 'Default', 'Cookies'), 'utf8')).toBe('v1');
    expect(unpacks).toBe(1);
  });

  it('a failed unpack leaves nothing behind and is tried again; a forgotten version is removed', async () => {
    const base = temp();
    const root = join(base, 'cache');
    const cache = new UnpackedProfiles(root);
    const failing = async (dir: string) => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'half'), 'x');
      throw new Error('storage went away');
    };
    await expect(cache.copyTo('v1', join(base, 'a'), failing)).rejects.toThrow('storage went away');
    expect(readdirSync(root)).toEqual([]);
    await cache.copyTo('v1', join(base, 'b'), async (dir) => {
      mkdirSync(dir);
      writeFileSync(join(dir, 'whole'), 'y');
    });
    expect(readdirSync(root)).toHaveLength(1);
    cache.forget('v1');
    // Removed in the background: until it is gone.
    await eventually(() => readdirSync(root).length === 0, 5_000, 'the forgotten version removed');
    expect(readdirSync(root)).toEqual([]);
    expect(existsSync(join(base, 'b', 'whole'))).toBe(true);
    await cache.reset();
    expect(existsSync(root)).toBe(false);
  });

  it('keeps at most 32 versions, dropping the least recently used', async () => {
    const base = temp();
    const root = join(base, 'cache');
    const cache = new UnpackedProfiles(root);
    const make = async (dir: string) => {
      mkdirSync(dir);
      writeFileSync(join(dir, 'f'), dir);
    };
    for (let i = 0; i < 34; i++) {
      await cache.copyTo(`v${i}`, join(base, `r${i}`), make);
      // Time is the order: each version used a clock tick after the last (least recently used).
      await new Promise((r) => setTimeout(r, 2));
    }
    // Each copy's file names its entry (the folder it was unpacked into, renamed in place).
    const entryOf = (i: number) => basename(readFileSync(join(base, `r${i}`, 'f'), 'utf8')).replace(/^\.partial-/, '');
    // The two least recently used are removed in the background: until both are gone.
    await eventually(() => !readdirSync(root).some((d) => d === entryOf(0) || d === entryOf(1)), 5_000, 'v0 and v1 removed');
    expect(readdirSync(root)).toHaveLength(32);
    expect(readdirSync(root).sort()).toEqual(Array.from({ length: 32 }, (_, i) => entryOf(i + 2)).sort());
  });
});
