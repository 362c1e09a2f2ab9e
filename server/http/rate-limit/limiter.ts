// What every rate limiter answers, whatever holds its counts: a sliding one-minute window
// per key. A hit is recorded only when it is allowed; a refused one says how many seconds
// until the oldest hit in the window leaves it (at least 1, for Retry-After).

export type Verdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  /** Records a hit for `key` if the window has room, and says whether it had. */
  take(key: string): Promise<Verdict>;
}

/** Where limits are counted: this process, PostgreSQL, or Redis. */
export type RateLimitBackend = 'memory' | 'postgres' | 'redis';

export interface RateLimits {
  readonly backend: RateLimitBackend;
  /**
   * A limiter of `perMinute` hits per key. `name` tells limits apart where they are stored
   * together (the database, Redis): two limiters of one name share their counts.
   */
  limiter(name: string, perMinute: number): RateLimiter;
  /** Releases what the backend holds (a Redis connection). */
  close(): Promise<void>;
}

export const WINDOW_MS = 60_000;

/** Seconds until the oldest hit leaves the window, for Retry-After. */
export function retryAfterSeconds(oldestHitMs: number, nowMs: number, windowMs = WINDOW_MS): number {
  return Math.max(1, Math.ceil((oldestHitMs + windowMs - nowMs) / 1000));
}
