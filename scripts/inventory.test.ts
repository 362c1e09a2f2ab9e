import { describe, expect, it } from 'vitest';
import { compare, conformanceLines, vitestLines } from './inventory.js';

describe('the inventory of what pnpm test runs', () => {
  it('has a line for each test that ran (a skipped one proves nothing) and for each check reported', () => {
    const lines = vitestLines(
      {
        numPassedTests: 1,
        numFailedTests: 1,
        numPendingTests: 1,
        numTodoTests: 0,
        testResults: [
          {
            name: '/root/server/a.test.ts',
            status: 'failed',
            assertionResults: [
              { fullName: 'a  passes', status: 'passed', failureMessages: [] },
              { fullName: 'a fails', status: 'failed', failureMessages: ['no'] },
              { fullName: 'a is skipped', status: 'skipped', failureMessages: [] },
            ],
          },
        ],
      },
      '/root/',
    );
    expect(lines).toEqual(['vitest server/a.test.ts › a passes', 'vitest server/a.test.ts › a fails']);
    const checks = conformanceLines('pglite', {
      summary: { passed: 1, failed: 0, skipped: 1 },
      checks: [
        { id: 'G1', name: 'answers\n  JSON', status: 'pass' },
        { id: 'G2', name: 'needs a key', status: 'skip' },
      ],
    });
    expect(checks).toEqual(['conformance:pglite G1 answers JSON', 'conformance:pglite G2 needs a key']);
  });

  it('finds what no longer runs, unless it moved to a test that ran', () => {
    const inventory = ['vitest a › x', 'vitest a › y', 'vitest a › z'];
    const moved = new Map([
      ['vitest a › y', ['vitest b › y']],
      ['vitest a › z', ['vitest c › gone']],
    ]);
    const c = compare(inventory, moved, ['vitest a › x', 'vitest b › y', 'vitest d › new']);
    expect(c.lost).toEqual([]);
    expect(c.movedNowhere).toEqual(['vitest a › z => vitest c › gone']);
    expect(c.added).toBe(2);
    // A test split in two: both parts must run.
    const split = new Map([['vitest a › y', ['vitest b › y1', 'vitest b › y2']]]);
    expect(compare(['vitest a › y'], split, ['vitest b › y1', 'vitest b › y2']).movedNowhere).toEqual([]);
    expect(compare(['vitest a › y'], split, ['vitest b › y1']).movedNowhere).toEqual(['vitest a › y => vitest b › y2']);
    expect(compare(inventory, new Map(), ['vitest a › x']).lost).toEqual(['vitest a › y', 'vitest a › z']);
  });
});
