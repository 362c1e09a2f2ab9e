// Rate limits: where they are counted is chosen here, once, for the whole server, by
// RATE_LIMIT_STORE (config.ts), whose default follows what is configured:
// - DATABASE_URL (PostgreSQL): the database, shared by every node of it. The default for a
//   cluster: it needs no extra service and met the goal (≤ 10 % per session at p50)
//   on a quiet machine, below.
// - REDIS_URL set: Redis instead, shared by the nodes that use it; cheaper per hit (below),
//   for operators who run one anyway.
// - PGlite: this process. PGlite serves one node only, so memory is exact and free; memory
//   is refused in a cluster (NODE_INTERNAL_URL).
//
// bench/rate-limits.ts, 2026-11-25, AMD EPYC 2 cores shared with other engineers' Chromium,
// POST /v1/sessions from the warm pool (the fastest creation, so the limiter's share is as
// large as it gets), servers on PostgreSQL differing only in RATE_LIMIT_STORE, the sides
// taking turns; overhead = median of round-by-round differences against memory:
//   load 2.8, 40 rounds: memory p50 12.6 p95 21.7 ms; postgres p50 13.5 p95 28.8 ms
//     (+0.7 ms, 5.4 %); redis p50 14.1 p95 22.7 ms (-0.9 ms); take() alone p50/p95:
//     postgres 0.3/0.5 ms, redis 0.1/0.2 ms.
//   load 10.6, 30 rounds: memory p50 20.8 ms; postgres 24.0 ms (-1.4 ms); redis 19.9 ms (-1.4 ms).
//   load 35, 40 rounds: memory p50 47.3 ms; postgres 70.9 ms (+15.6 ms, 33 %); redis 57.8 ms
//     (+4.8 ms, 10 %): on an overloaded machine PostgreSQL's extra backend work shows.
// Before rate_limits was UNLOGGED (migration 026), a hit's commit waited for a WAL flush:
// take() 4.3 ms p50 at load 36, and +25.6 ms (49 %) per creation.
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
