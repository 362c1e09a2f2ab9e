// The ad-block's rules indexed once by a real Chromium, then only read.
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { ADBLOCK } from './adblock.js';
import { preindexed } from './preindexed.js';
import { chromiumPath } from './test-support.js';

const source = fileURLToPath(new URL('./extensions/adblock/', import.meta.url));
const parent = mkdtempSync(join(tmpdir(), 'preindexed-'));
const index = () => preindexed(source, ADBLOCK.id, ADBLOCK.rulesets.length, chromiumPath, { parent });

afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe('preindexed', () => {
  it('indexes every ruleset once, into a copy everyone reads and only its maker writes', async () => {
    const made = await index();
    const home = dirname(made.dir);
    expect(made.dir).toBe(join(home, 'ext'));
    expect(readdirSync(join(made.dir, '_metadata', 'generated_indexed_rulesets'))).toHaveLength(ADBLOCK.rulesets.length);
    const settings = made.settings as { location: number; path: string; dnr_static_ruleset: Record<string, { checksum: number }> };
    expect(settings.location).toBe(4); // unpacked: loaded from path at every start
    expect(settings.path).toBe(made.dir);
    expect(Object.values(settings.dnr_static_ruleset).map((r) => typeof r.checksum)).toEqual(ADBLOCK.rulesets.map(() => 'number'));
    for (const name of ['', 'ext', 'ext/manifest.json', 'ext/_metadata']) {
      expect(statSync(join(home, name)).mode & 0o777, name).toBe(statSync(join(home, name)).isDirectory() ? 0o755 : 0o644);
    }
    // Nothing of the indexing browser is left: no profile, no work folder.
    expect(existsSync(join(home, 'profile'))).toBe(false);
    expect(readdirSync(parent)).toEqual([`${home.slice(parent.length + 1)}`]);

    // The next server process finds it: the same folder, not indexed again.
    const before = statSync(join(home, 'settings.json'));
    const again = await index();
    expect(again).toEqual(made);
    expect(statSync(join(home, 'settings.json')).mtimeMs).toBe(before.mtimeMs);
  });

  it('refuses a copy that others could have written, and a Chromium that cannot index, leaving nothing of its own', async () => {
    const home = dirname((await index()).dir);
    chmodSync(home, 0o777);
    try {
      await expect(index()).rejects.toThrow(/writable by others/);
    } finally {
      chmodSync(home, 0o755);
    }
    await expect(preindexed(source, ADBLOCK.id, ADBLOCK.rulesets.length, '/bin/false', { parent })).rejects.toThrow(/exited \(code 1/);
    expect(readdirSync(parent).filter((n) => n.startsWith('cb-preindexing-'))).toEqual([]);
  });
});
