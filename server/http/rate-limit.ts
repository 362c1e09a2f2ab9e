// A sliding one-minute window per key, in memory. Each node limits what it serves.
export class RateLimiter {
  private readonly hits = new Map<string, number[]>();
  private calls = 0;

  constructor(private readonly perMinute: number, private readonly now: () => number = Date.now) {}

  /** Records a hit and says whether it is allowed; when not, how many seconds to wait. */
  take(key: string): { allowed: true } | { allowed: false; retryAfterSeconds: number } {
    const now = this.now();
    const since = now - 60_000;
    // Keys seen once (client addresses, say) must not pile up: now and then drop idle ones.
    if (++this.calls % 1000 === 0) {
      for (const [k, list] of this.hits) if (list[list.length - 1] <= since) this.hits.delete(k);
    }
    const list = (this.hits.get(key) ?? []).filter((t) => t > since);
    if (list.length >= this.perMinute) {
      this.hits.set(key, list);
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((list[0] + 60_000 - now) / 1000)) };
    }
    list.push(now);
    this.hits.set(key, list);
    return { allowed: true };
  }
}
