import { describe, expect, it } from 'vitest';
import { percentile, ratioInterval } from './machine.js';

describe('percentile', () => {
  it('is the nearest rank', () => {
    expect(percentile([5, 1, 4, 2, 3], 50)).toBe(3);
    expect(percentile([1, 2, 3, 4], 95)).toBe(4);
    expect(percentile([], 50)).toBeNaN();
  });
});

describe('ratioInterval', () => {
  it('is a point when every ratio agrees', () => {
    const [lo, hi] = ratioInterval([0.95, 0.95, 0.95]);
    expect(lo).toBeCloseTo(0.95, 12);
    expect(hi).toBeCloseTo(0.95, 12);
  });

  it('is the t interval of the mean of the logarithms, turned back into ratios', () => {
    // ln 0.9 and ln 1.1: mean -0.00503, sd 0.14190; t(1 df) = 12.71, half width 1.2753.
    const [lo, hi] = ratioInterval([0.9, 1.1]);
    expect(lo).toBeCloseTo(Math.exp(-0.00503 - 1.2753), 3);
    expect(hi).toBeCloseTo(Math.exp(-0.00503 + 1.2753), 3);
  });

  it('narrows as rounds agree and as there are more of them', () => {
    const few = ratioInterval([0.9, 1.0, 0.95, 1.05]);
    const many = ratioInterval([0.9, 1.0, 0.95, 1.05, 0.9, 1.0, 0.95, 1.05]);
    expect(many[1] - many[0]).toBeLessThan(few[1] - few[0]);
    expect(few[0]).toBeLessThan(0.975);
    expect(few[1]).toBeGreaterThan(0.975);
  });

  it('has no interval from one round', () => {
    expect(ratioInterval([1]).every(Number.isNaN)).toBe(true);
  });
});
