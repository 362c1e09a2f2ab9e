// A sliding one-minute window per key, in memory. Each node limits what it serves.
export class RateLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(private readonly perMinute: number, private readonly now: () => number = Date.now) {}

  /** Records a hit and says whether it is allowed; when not, how many seconds to wait. */
  take(key: string): { allowed: true } | { allowed: false; retryAfterSeconds: number } {
    const now = this.now();
    const since = now - 60_000;
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
