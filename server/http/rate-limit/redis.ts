// Limits counted in Redis (REDIS_URL), shared by every node that uses it: per (limit, key)
// a sorted set of the hits inside the window, scored by Redis's own clock. One Lua script
// drops the hits that left the window, counts, and records the hit if there is room, so a
// decision is atomic whichever node asks. The set expires with its newest hit.
//
// Redis down while serving: the hit is allowed and the failure logged. Rate limits guard
// against abuse; refusing every session because the limiter's store is unreachable would
// turn a Redis outage into a service outage. At start, an unreachable Redis stops the node.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { retryAfterSeconds, WINDOW_MS, type RateLimiter, type RateLimits, type Verdict } from './limiter.js';

// KEYS[1] the set; ARGV: perMinute, window ms, a member unique to this hit.
// Returns {1} when taken, {0, oldest hit ms, now ms} when refused.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return {1}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {0, tonumber(oldest[2]), now}`;

/** How long the start waits for Redis to answer. */
const CONNECT_TIMEOUT_MS = 5_000;

type TakeCommand = { rateLimitTake(key: string, perMinute: number, windowMs: number, member: string): Promise<[number, number?, number?]> };

/** Connects and checks that Redis answers; throws a start error naming REDIS_URL otherwise. */
export async function redisRateLimits(o: { url: string; keyPrefix: string; log: Logger }): Promise<RateLimits> {
  const redis = new Redis(o.url, {
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    // A hit waits for one reconnection at most, then is allowed (see above).
    maxRetriesPerRequest: 1,
  });
  // Reconnections are ioredis's job; an 'error' event without a listener would crash the process.
  let lastWarn = 0;
  let lastError: Error | undefined;
  redis.on('error', (err: Error) => {
    lastError = err;
    if (Date.now() - lastWarn < 10_000) return;
    lastWarn = Date.now();
    o.log.warn({ err: err.message }, 'Redis (REDIS_URL) connection error');
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    // Never echo the URL: it may hold a password.
    throw new Error(`REDIS_URL: Redis does not answer (${(lastError ?? (err as Error)).message})`);
  }
  redis.defineCommand('rateLimitTake', { numberOfKeys: 1, lua: TAKE });
  const take = redis as unknown as TakeCommand;
  const node = randomBytes(6).toString('hex');
  let seq = 0;

  return {
    backend: 'redis',
    limiter(name, perMinute): RateLimiter {
      return {
        async take(key): Promise<Verdict> {
          let answer;
          try {
            answer = await take.rateLimitTake(`${o.keyPrefix}rate:${name}:${key}`, perMinute, WINDOW_MS, `${node}:${++seq}`);
          } catch (err) {
            o.log.error({ err: (err as Error).message, limit: name }, 'rate limit not checked: Redis did not answer; the request is allowed');
            return { allowed: true };
          }
          if (answer[0] === 1) return { allowed: true };
          return { allowed: false, retryAfterSeconds: retryAfterSeconds(answer[1]!, answer[2]!) };
        },
      };
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
