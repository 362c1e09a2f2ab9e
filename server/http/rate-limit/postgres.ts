// Limits counted in PostgreSQL, shared by every node of the database (table rate_limits,
// migration 026). The same sliding window as the in-memory limiter, exactly: a row per
// (limit, key) keeps the times of its last `perMinute` hits, and one statement decides and
// records a hit. Its INSERT ... ON CONFLICT DO UPDATE takes the row's lock, so concurrent
// hits of one key, from any node, are decided one after the other; the update's WHERE is
// the decision (no row returned: refused), which leaves a refused hit unrecorded.
//
// Times come from the database's clock, so nodes whose clocks disagree still share one
// window. A row whose newest hit has left the window is dead weight: now and then, one
// DELETE over the expires_at index removes them all.
import type { Logger } from 'pino';
import type { Db } from '../../store/db.js';
import { retryAfterSeconds, WINDOW_MS, type RateLimiter, type RateLimits, type Verdict } from './limiter.js';

/** How often one node deletes expired rows. */
const SWEEP_EVERY_MS = 60_000;

const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

// $1 name, $2 key, $3 perMinute, $4 window in ms. The hit's time is read before the row
// lock is granted, so under contention it may be a little older than the row's newest:
// greatest() keeps the array ascending, and hits[1] the oldest.
const TAKE = `
WITH t AS (SELECT ${NOW_MS} AS ms)
INSERT INTO rate_limits AS r (name, key, hits, expires_at)
SELECT $1, $2, ARRAY[t.ms], to_timestamp((t.ms + $4::bigint) / 1000.0) FROM t
ON CONFLICT (name, key) DO UPDATE
   SET hits = (r.hits || greatest(EXCLUDED.hits[1], r.hits[cardinality(r.hits)]))[greatest(1, cardinality(r.hits) + 2 - $3::int):],
       expires_at = EXCLUDED.expires_at
 WHERE cardinality(r.hits) < $3::int OR r.hits[greatest(1, cardinality(r.hits) + 1 - $3::int)] <= EXCLUDED.hits[1] - $4::bigint
RETURNING 1 AS taken`;

// After a refusal: the oldest hit inside the window, for Retry-After.
const OLDEST = `
SELECT hits[greatest(1, cardinality(hits) + 1 - $3::int)] AS oldest, ${NOW_MS} AS now
  FROM rate_limits WHERE name = $1 AND key = $2`;

export function postgresRateLimits(db: Db, log: Logger): RateLimits {
  let lastSweep = Date.now();
  const sweepSometimes = () => {
    if (Date.now() - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = Date.now();
    db.query('DELETE FROM rate_limits WHERE expires_at < now()').catch((err) => log.warn({ err }, 'rate limit sweep failed'));
  };
  return {
    backend: 'postgres',
    limiter(name, perMinute): RateLimiter {
      return {
        async take(key): Promise<Verdict> {
          sweepSometimes();
          const taken = await db.query(TAKE, [name, key, perMinute, WINDOW_MS]);
          if (taken.length > 0) return { allowed: true };
          const [row] = await db.query<{ oldest: number; now: number }>(OLDEST, [name, key, perMinute]);
          // The row was swept between the two statements: its hits had all left the window.
          if (!row) return { allowed: false, retryAfterSeconds: 1 };
          return { allowed: false, retryAfterSeconds: retryAfterSeconds(row.oldest, row.now) };
        },
      };
    },
    close: async () => {},
  };
}
