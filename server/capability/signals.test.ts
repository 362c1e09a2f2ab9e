// A server's signals (signals.ts): each server's are its own, an unsubscribed listener hears
// nothing, an emit nobody hears is fine, and a wait ends at its key's emit or at its limit.
import { describe, expect, it } from 'vitest';
import { createSignals } from './signals.js';

describe('createSignals', () => {
  it('gives two servers signals that do not cross', () => {
    const [a, b] = [createSignals(), createSignals()];
    const heard: string[] = [];
    a.deliveriesWritten.on(() => heard.push('a written'));
    b.endRecorded.on('ses_1', () => heard.push('b ended'));
    b.deliveriesWritten.emit();
    a.endRecorded.emit('ses_1', { credits_used: 1 });
    expect(heard).toEqual([]);
    a.deliveriesWritten.emit();
    b.endRecorded.emit('ses_1', { credits_used: 1 });
    expect(heard).toEqual(['a written', 'b ended']);
  });

  it('tells a removed listener nothing, and an emit nobody hears is fine', () => {
    const s = createSignals();
    const heard: unknown[] = [];
    const off = s.endRecorded.on('ses_1', (row) => heard.push(row));
    const offWritten = s.deliveriesWritten.on(() => heard.push('written'));
    off();
    offWritten();
    s.endRecorded.emit('ses_1', { credits_used: 2 });
    s.deliveriesWritten.emit();
    s.deliveryAttempted.emit('evt_nobody');
    expect(heard).toEqual([]);
  });

  it('hears only its own key, and every listener despite one that throws', () => {
    const s = createSignals();
    const heard: unknown[] = [];
    s.endRecorded.on('ses_1', () => {
      throw new Error('a listener failed');
    });
    s.endRecorded.on('ses_1', (row) => heard.push(row.credits_used));
    s.endRecorded.emit('ses_2', { credits_used: 1 });
    s.endRecorded.emit('ses_1', { credits_used: 3 });
    expect(heard).toEqual([3]);
  });
});

describe('KeyedSignal.next', () => {
  it('ends when an attempt of its event ends, not of another event', async () => {
    const { deliveryAttempted } = createSignals();
    let done = false;
    const waiting = deliveryAttempted.next('evt_a', 10_000).then(() => (done = true));
    deliveryAttempted.emit('evt_b');
    // Negative: another event's attempt does not end it; a window for a wrong wake-up.
    await new Promise((r) => setTimeout(r, 20));
    expect(done).toBe(false);
    const started = Date.now();
    deliveryAttempted.emit('evt_a');
    await waiting;
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('ends at its limit when no attempt comes; every waiter of the event ends with one attempt', async () => {
    const { deliveryAttempted } = createSignals();
    const started = Date.now();
    await deliveryAttempted.next('evt_c', 50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    const both = Promise.all([deliveryAttempted.next('evt_d', 10_000), deliveryAttempted.next('evt_d', 10_000)]);
    deliveryAttempted.emit('evt_d');
    await both;
  });
});
