// Limits counted in this process: exact for one node (PGlite serves one node only), and
// each node would count apart in a cluster, which is why PostgreSQL or Redis count there.
import { retryAfterSeconds, WINDOW_MS, type RateLimiter, type RateLimits, type Verdict } from './limiter.js';

export class MemoryRateLimiter implements RateLimiter {
  private readonly hits = new Map<string, number[]>();
  private calls = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(key: string): Promise<Verdict> {
    return Promise.resolve(this.takeNow(key));
  }

  private takeNow(key: string): Verdict {
    const now = this.now();
    const since = now - WINDOW_MS;
    // Keys seen once (client addresses, say) must not pile up: now and then drop idle ones.
    if (++this.calls % 1000 === 0) {
      for (const [k, list] of this.hits) if (list[list.length - 1] <= since) this.hits.delete(k);
    }
    const list = (this.hits.get(key) ?? []).filter((t) => t > since);
    if (list.length >= this.perMinute) {
      this.hits.set(key, list);
      return { allowed: false, retryAfterSeconds: retryAfterSeconds(list[0], now) };
    }
    list.push(now);
    this.hits.set(key, list);
    return { allowed: true };
  }
}

export function memoryRateLimits(): RateLimits {
  return {
    backend: 'memory',
    // Each limiter keeps its own map: in one process, a name needs no sharing.
    limiter: (_name, perMinute) => new MemoryRateLimiter(perMinute),
    close: async () => {},
  };
}
