// The in-process signal of a delivery attempt's end (attempted.ts): a wait ends at the
// attempt or at its limit, whichever comes first, and leaves nothing behind.
import { describe, expect, it } from 'vitest';
import { deliveryAttempted, firstAttempt } from './attempted.js';

describe('firstAttempt', () => {
  it('ends when an attempt of its event ends, not of another event', async () => {
    let done = false;
    const waiting = firstAttempt('evt_a', 10_000).then(() => (done = true));
    deliveryAttempted('evt_b');
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    const started = Date.now();
    deliveryAttempted('evt_a');
    await waiting;
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('ends at its limit when no attempt comes; every waiter of the event ends with one attempt', async () => {
    const started = Date.now();
    await firstAttempt('evt_c', 50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const both = Promise.all([firstAttempt('evt_d', 10_000), firstAttempt('evt_d', 10_000)]);
    deliveryAttempted('evt_d');
    await both;
  });
});
