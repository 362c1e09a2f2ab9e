// Retry schedule: the delay before each attempt after the first, growing roughly
// exponentially and reaching about a day in total; after the last attempt fails the
// delivery is dead.
//   attempt: 1    2    3     4     5     6      7    8    9    10   11
//   after:   now  5 s  30 s  2 min 5 min 30 min 1 h  2 h  4 h  6 h  10 h   (≈ 23.6 h in all)
// Eleven attempts: a receiver failing 30 % of requests at random loses one event in about
// 500,000 (0.3^11); the quick early retries cover blips, the long tail covers outages.
// Each delay is spread by ±20 % jitter so a receiver that comes back is not hit by every
// queued delivery in the same second.
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  5_000,
  30_000,
  2 * 60_000,
  5 * 60_000,
  30 * 60_000,
  3_600_000,
  2 * 3_600_000,
  4 * 3_600_000,
  6 * 3_600_000,
  10 * 3_600_000,
];

export const JITTER = 0.2;
/** Retry-After from a receiver is honoured up to this. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/** Total attempts a delivery gets: the first plus one per schedule entry. */
export function maxAttempts(schedule: readonly number[] = DEFAULT_RETRY_SCHEDULE_MS): number {
  return schedule.length + 1;
}

/**
 * The delay before attempt `failedAttempt + 1`, or null when `failedAttempt` was the last.
 * `retryAfterMs` (from a 429/503 Retry-After) lengthens the delay, never shortens it.
 */
export function nextRetryDelay(
  failedAttempt: number,
  options: { schedule?: readonly number[]; random?: () => number; retryAfterMs?: number | null } = {},
): number | null {
  const schedule = options.schedule ?? DEFAULT_RETRY_SCHEDULE_MS;
  if (failedAttempt < 1 || failedAttempt > schedule.length) return null;
  const base = schedule[failedAttempt - 1];
  const r = (options.random ?? Math.random)();
  let delay = Math.round(base * (1 - JITTER + 2 * JITTER * r));
  if (options.retryAfterMs != null && options.retryAfterMs > delay) {
    delay = Math.min(options.retryAfterMs, MAX_RETRY_AFTER_MS);
  }
  return delay;
}

/** Milliseconds from a Retry-After header (seconds or an HTTP date), or null. */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, t - now);
}
