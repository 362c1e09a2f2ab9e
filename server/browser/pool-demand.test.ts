import { describe, expect, it } from 'vitest';
import { PoolDemand } from './pool-demand.js';

const demand = (o: Partial<ConstructorParameters<typeof PoolDemand>[0]> = {}) => new PoolDemand({ floor: 1, max: 8, idleMs: 60_000, ...o });

describe('PoolDemand', () => {
  it('holds the floor while nothing is asked', () => {
    expect(demand().target(0)).toBe(1);
    expect(demand({ floor: 3 }).target(0)).toBe(3);
  });

  it('grows by the creations that arrive during one launch (rate x launch time)', () => {
    const d = demand();
    d.launched(1_000); // smoothed from the first guess of 1 s: still 1 s
    // One creation every 400 ms: 2.5 a second, so 2.5 arrive while a browser launches.
    for (let t = 0; t <= 4_000; t += 400) d.ask(false, t);
    expect(d.target(4_000)).toBe(1 + 3);
    // Launches that take twice as long call for twice as many.
    for (let i = 0; i < 20; i++) d.launched(2_000);
    expect(d.target(4_000)).toBe(1 + 5);
  });

  it('never passes its ceiling nor the memory budget', () => {
    const fast = (d: PoolDemand) => {
      for (let t = 0; t <= 1_000; t += 10) d.ask(false, t);
      return d;
    };
    expect(fast(demand({ max: 4 })).target(1_000)).toBe(4);
    const budgeted = fast(demand({ max: 100, budgetBytes: 1_000 }));
    expect(budgeted.target(1_000)).toBe(100); // nothing measured yet: the ceiling alone
    budgeted.launched(1_000, 300);
    expect(budgeted.target(1_000)).toBe(3); // 1,000 bytes hold three browsers of 300
    // A budget below one browser still keeps the floor.
    const tiny = fast(demand({ floor: 2, budgetBytes: 100 }));
    tiny.launched(1_000, 300);
    expect(tiny.target(1_000)).toBe(2);
  });

  it('leaves the floor alone while it serves every creation', () => {
    const d = demand();
    for (let t = 0; t <= 4_000; t += 400) d.ask(true, t);
    expect(d.target(4_000)).toBe(1);
    d.ask(false, 4_400); // one creation found the pool empty
    expect(d.target(4_400)).toBe(1 + 3);
  });

  it('goes back to the floor once nobody has asked for idleMs', () => {
    const d = demand({ idleMs: 5_000 });
    for (let t = 0; t <= 2_000; t += 100) d.ask(false, t);
    expect(d.target(2_000)).toBeGreaterThan(1);
    expect(d.target(2_000 + 5_001)).toBe(1);
  });
});
