// The owner cache alone: bounded (least recently used out first), trusted for its time only,
// and a node's entries dropped together.
import { describe, expect, it } from 'vitest';
import { OwnerCache } from './owner-cache.js';

const A = { nodeId: 'node-a', internalUrl: 'http://10.0.0.1:8080' };
const B = { nodeId: 'node-b', internalUrl: 'http://10.0.0.2:8080' };

describe('OwnerCache', () => {
  it('answers what it was told until its time is up', () => {
    let now = 1_000;
    const cache = new OwnerCache({ max: 10, ttlMs: 500, now: () => now });
    cache.set('s1', A);
    expect(cache.get('s1')).toEqual(A);
    now += 499;
    expect(cache.get('s1')).toEqual(A);
    now += 1;
    expect(cache.get('s1')).toBeUndefined();
    // An expired entry is gone, not kept beside fresh ones.
    expect(cache.size).toBe(0);
    cache.set('s1', B);
    expect(cache.get('s1')).toEqual(B);
  });

  it('keeps at most max entries, the least recently used leaving first', () => {
    const cache = new OwnerCache({ max: 2, ttlMs: 60_000 });
    cache.set('s1', A);
    cache.set('s2', A);
    expect(cache.get('s1')).toEqual(A); // s2 is now the least recently used
    cache.set('s3', B);
    expect(cache.size).toBe(2);
    expect(cache.get('s2')).toBeUndefined();
    expect(cache.get('s1')).toEqual(A);
    expect(cache.get('s3')).toEqual(B);
  });

  it('drops one session, or every session of a node', () => {
    const cache = new OwnerCache({ max: 10, ttlMs: 60_000 });
    cache.set('s1', A);
    cache.set('s2', A);
    cache.set('s3', B);
    cache.drop('s3');
    expect(cache.get('s3')).toBeUndefined();
    cache.set('s3', B);
    cache.dropNode('node-a');
    expect([cache.get('s1'), cache.get('s2'), cache.get('s3')]).toEqual([undefined, undefined, B]);
  });
});
