// The soak's short form for CI: 66 s at concurrency 2 on PGlite, every end path taken,
// every check passing. The full soak (pnpm soak, 30 minutes) is run by hand: a minute is
// too short to show a slow leak, long enough to show that each end path leaves nothing and
// counts once. A timeout session lasts a minute (the API's least max_duration), and the
// soak starts one only while the run has 65 s left: seed 38 starts with it, and its first
// six sessions take every end path, recorded or not, headful or headless.
import { describe, expect, it } from 'vitest';
import { END_PATHS, planFor, runSoak } from './soak.js';

const SEED = 38;

describe('bench/soak, short form', () => {
  it('takes its end paths from a seeded mix, the same on every run', () => {
    const paths = Array.from({ length: 40 }, (_, i) => planFor(SEED, i).path);
    expect(Array.from({ length: 40 }, (_, i) => planFor(SEED, i).path)).toEqual(paths);
    // The first session is the timeout; within the first six (those the short form surely
    // drives beside it), every path.
    expect(paths[0]).toBe('timeout');
    expect(new Set(paths.slice(0, 6))).toEqual(new Set(END_PATHS));
  });

  it('a minute of sessions ended every way leaves nothing behind and counts everything once', async () => {
    const lines: string[] = [];
    const result = await runSoak({ minutes: 1.1, concurrency: 2, seed: SEED, db: 'pglite', log: (l) => lines.push(l) });
    const failed = result.checks.filter((c) => !c.ok);
    expect(failed, lines.join('\n')).toEqual([]);
    expect(result.checks.length).toBeGreaterThanOrEqual(13);
    for (const p of END_PATHS) expect(result.byPath[p], `sessions ended by ${p}`).toBeGreaterThan(0);
  }, 240_000); // measured: 80 s alone; the run is 66 s of wall time whatever the load
});
