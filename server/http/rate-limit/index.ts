// Rate limits: where they are counted is chosen here, once, for the whole server, by
// RATE_LIMIT_STORE (config.ts), whose default follows what is configured:
// - REDIS_URL set: Redis, shared by the nodes that use it. Preferred when it is there: it
//   was the cheaper store in the measurement below.
// - else DATABASE_URL (PostgreSQL): the database, shared by every node of it. No extra
//   service for a cluster, at a measured cost (below) above the 10 % on the loaded
//   machine.
// - else PGlite: this process. PGlite serves one node only, so memory is exact and free;
//   memory is refused in a cluster (NODE_INTERNAL_URL).
//
// bench/rate-limits.ts, 2026-11-25, AMD EPYC 2 cores shared with other engineers' Chromium
// (load average 33 to 39 throughout), POST /v1/sessions from the warm pool (~50 ms, the
// fastest creation, so the limiter's share is as large as it gets), servers on PostgreSQL
// differing only in RATE_LIMIT_STORE, the sides taking turns; overhead = median of the
// round-by-round differences against memory:
//   60 rounds, logged table:    memory p50 51.8 p95 236.8 ms; postgres p50 81.2 p95 375.7 ms
//                               (+25.6 ms, 49 %); redis p50 47.1 p95 145.1 ms (+1.0 ms, 2 %)
//   40 rounds, UNLOGGED table:  memory p50 47.3 p95 116.3 ms; postgres p50 70.9 p95 176.3 ms
//                               (+15.6 ms, 33 %); redis p50 57.8 p95 147.7 ms (+4.8 ms, 10 %)
//   take() alone (UNLOGGED), p50/p95: postgres 0.6/10.3 ms, redis 0.2/7.3 ms.
// On a cold creation (~1 s, a browser launched) either store is within 10 %; on a warm one,
// only Redis was. The figures are from an overloaded machine and move between runs.
import type { Logger } from 'pino';
import type { Config } from '../../config/config.js';
import type { Db } from '../../store/db.js';
import type { RateLimits } from './limiter.js';
import { memoryRateLimits } from './memory.js';
import { postgresRateLimits } from './postgres.js';
import { redisRateLimits } from './redis.js';

export type { RateLimitBackend, RateLimiter, RateLimits, Verdict } from './limiter.js';
export { MemoryRateLimiter } from './memory.js';

export async function openRateLimits(o: { db: Db; config: Pick<Config, 'rateLimitStore' | 'redisUrl' | 'redisKeyPrefix'>; log: Logger }): Promise<RateLimits> {
  const { rateLimitStore, redisUrl, redisKeyPrefix } = o.config;
  // loadConfig has checked that the store's URL is set.
  if (rateLimitStore === 'redis') return redisRateLimits({ url: redisUrl!, keyPrefix: redisKeyPrefix, log: o.log });
  if (rateLimitStore === 'postgres' && o.db.kind === 'postgres') return postgresRateLimits(o.db, o.log);
  return memoryRateLimits();
}
