import { describe, expect, it } from 'vitest';
import { OneAtATime } from './one-at-a-time.js';

describe('OneAtATime', () => {
  it('runs the jobs of one key in order, one at a time, past a failure, and forgets an idle key', async () => {
    const q = new OneAtATime();
    const log: string[] = [];
    let release!: () => void;
    const first = q.run('a', async () => {
      log.push('a1 start');
      await new Promise<void>((r) => (release = r));
      log.push('a1 end');
      throw new Error('a1 failed');
    });
    const second = q.run('a', async () => {
      log.push('a2');
      return 2;
    });
    // Another key does not wait for key a.
    expect(await q.run('b', async () => 'b')).toBe('b');
    expect(log).toEqual(['a1 start']);
    release();
    await expect(first).rejects.toThrow('a1 failed');
    expect(await second).toBe(2);
    expect(log).toEqual(['a1 start', 'a1 end', 'a2']);
    await new Promise((r) => setImmediate(r));
    expect(q.busy).toBe(0);
  });
});
