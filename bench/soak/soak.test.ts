// The soak's short form for CI: two minutes at concurrency 2 on PGlite, every end path
// taken, every check passing. The full soak (pnpm soak, 30 minutes) is run by hand.
import { describe, expect, it } from 'vitest';
import { END_PATHS, planFor, runSoak } from './soak.js';

describe('bench/soak, short form', () => {
  it('takes its end paths from a seeded mix, the same on every run', () => {
    const paths = Array.from({ length: 40 }, (_, i) => planFor(1, i).path);
    expect(Array.from({ length: 40 }, (_, i) => planFor(1, i).path)).toEqual(paths);
    // Within the first sessions of seed 1 (those the short form surely drives), every path.
    expect(new Set(paths.slice(0, 12))).toEqual(new Set(END_PATHS));
  });

  it('two minutes of sessions ended every way leave nothing behind and count everything once', async () => {
    const lines: string[] = [];
    const result = await runSoak({ minutes: 2, concurrency: 2, seed: 1, db: 'pglite', log: (l) => lines.push(l) });
    const failed = result.checks.filter((c) => !c.ok);
    expect(failed, lines.join('\n')).toEqual([]);
    expect(result.checks.length).toBeGreaterThanOrEqual(13);
    for (const p of END_PATHS) expect(result.byPath[p], `sessions ended by ${p}`).toBeGreaterThan(0);
  }, 300_000); // measured: 2.3 min at load average 10 to 15, 3.3 min at 30 to 48
});
