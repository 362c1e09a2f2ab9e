import { describe, expect, it } from 'vitest';
import { linearFit, slopeBeside } from './procs.js';

// Samples every 2 s with 0-2 sessions in flight, each holding 15 fds, and 0-5 webhook
// deliveries held open by a receiver that never answers, each one fd.
const inFlight = [0, 1, 2, 2, 1, 0, 1, 2, 2, 2, 1, 2, 2, 2, 2, 2];
const hooks = [0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5];
const samples = (leakPerSecond: number) => inFlight.map((k, i) => ({ x: i * 2, y: 170 + 15 * k + hooks[i]! + leakPerSecond * i * 2, z: [k, hooks[i]!] }));

describe('slopeBeside', () => {
  it('finds no rise where fds only follow what is in flight, where a plain fit sees one', () => {
    expect(linearFit(samples(0).map(({ x, y }) => ({ x, y }))).slope).toBeGreaterThan(0.5);
    expect(slopeBeside(samples(0))).toBeCloseTo(0, 9);
  });

  it('finds a leak beside what is in flight', () => {
    expect(slopeBeside(samples(0.25))).toBeCloseTo(0.25, 9);
  });

  it('drops a quantity that never changes, and answers 0 for a single sample', () => {
    expect(slopeBeside(samples(0.5).map((s) => ({ ...s, z: [...s.z, 3] })))).toBeCloseTo(0.5, 9);
    expect(slopeBeside([{ x: 1, y: 2, z: [0] }])).toBe(0);
  });
});
