import { describe, expect, it } from 'vitest';
import { longestFirst, readDurations } from './durations.js';

describe('the order test files start in', () => {
  it('is longest first, files of unknown length before every other', () => {
    const order = longestFirst(['a', 'b', 'new', 'c'], (f) => f, { a: 10, b: 120, c: 30 });
    expect(order).toEqual(['new', 'b', 'c', 'a']);
  });

  it('knows the length of the files of this run (durations.json is not stale)', () => {
    const known = readDurations();
    expect(known['bench/soak/soak.test.ts']).toBeGreaterThan(0);
    expect(known['server/testing/durations.test.ts']).toBeDefined();
  });
});
