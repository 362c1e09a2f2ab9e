// Each backend of the rate limiter against the real store it counts in: memory, PostgreSQL
// (two connection pools on one schema stand for two nodes) and Redis (two connections).
// The same sliding window everywhere: N hits per key pass, the next is refused with the
// seconds until the oldest leaves; keys and limit names count apart; concurrent hits from
// both "nodes" never pass more than N.
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb, type Db } from '../../store/db.js';
import { migrate } from '../../store/migrate.js';
import { MemoryRateLimiter } from './memory.js';
import { postgresRateLimits } from './postgres.js';
import { redisRateLimits } from './redis.js';
import type { RateLimits } from './limiter.js';
import { sharedPostgresSchema, startTestServer } from '../../testing/harness.js';
import { deleteKeys, redisAnswers, TEST_REDIS_URL, testKeyPrefix } from '../../testing/redis.js';

const log = pino({ level: 'silent' });

/** The laws every backend keeps, on two handles to one store (two nodes). */
function laws(open: () => Promise<[RateLimits, RateLimits]>) {
  let a: RateLimits;
  let b: RateLimits;
  beforeAll(async () => {
    [a, b] = await open();
  });

  it('N per key per minute across both nodes, then a refusal with Retry-After seconds', async () => {
    const key = randomBytes(4).toString('hex');
    const onA = a.limiter('test', 3);
    const onB = b.limiter('test', 3);
    expect(await onA.take(key)).toEqual({ allowed: true });
    expect(await onB.take(key)).toEqual({ allowed: true });
    expect(await onA.take(key)).toEqual({ allowed: true });
    const refused = await onB.take(key);
    expect(refused.allowed).toBe(false);
    if (refused.allowed) return;
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(55);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    // A refusal is not a hit: the window still holds three.
    expect((await onA.take(key)).allowed).toBe(false);
    // Another key and another limit count apart.
    expect(await onA.take(`${key}-other`)).toEqual({ allowed: true });
    expect(await a.limiter('test-other', 3).take(key)).toEqual({ allowed: true });
  });

  it('concurrent hits of one key from both nodes pass exactly N', async () => {
    const key = randomBytes(4).toString('hex');
    const onA = a.limiter('race', 5);
    const onB = b.limiter('race', 5);
    const verdicts = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? onA : onB).take(key)));
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(5);
  });
}

describe('rate limits: memory', () => {
  it('a sliding window: a hit leaves it 60 s after it was taken', async () => {
    let now = 1_000_000;
    const limiter = new MemoryRateLimiter(2, () => now);
    expect(await limiter.take('k')).toEqual({ allowed: true });
    now += 30_000;
    expect(await limiter.take('k')).toEqual({ allowed: true });
    expect(await limiter.take('k')).toEqual({ allowed: false, retryAfterSeconds: 30 });
    now += 30_000;
    expect(await limiter.take('k')).toEqual({ allowed: true });
    expect(await limiter.take('k')).toEqual({ allowed: false, retryAfterSeconds: 30 });
  });
});

describe.skipIf(!process.env.DATABASE_URL)('rate limits: PostgreSQL', () => {
  const dbs: Db[] = [];
  let schema: Awaited<ReturnType<typeof sharedPostgresSchema>>;
  laws(async () => {
    schema = await sharedPostgresSchema();
    const url = schema.url;
    dbs.push(await openDb({ databaseUrl: url }), await openDb({ databaseUrl: url }));
    await migrate(dbs[0]);
    return [postgresRateLimits(dbs[0], log), postgresRateLimits(dbs[1], log)];
  });

  it('keeps at most N hits a key, and a row only while a hit is in the window', async () => {
    const limits = postgresRateLimits(dbs[0], log);
    for (let i = 0; i < 5; i++) await limits.limiter('rows', 2).take('k');
    const [row] = await dbs[0].query<{ hits: number[]; live: boolean }>(
      `SELECT hits, expires_at > now() + interval '59 seconds' AS live FROM rate_limits WHERE name = 'rows' AND key = 'k'`,
    );
    expect(row.hits).toHaveLength(2);
    expect(row.live).toBe(true);
  });

  afterAll(async () => {
    for (const db of dbs) await db.close();
    await schema.drop();
  });
});

const redisUp = await redisAnswers('rate limits: Redis');

describe.skipIf(!redisUp)('rate limits: Redis', () => {
  const prefix = testKeyPrefix();
  const opened: RateLimits[] = [];
  laws(async () => {
    opened.push(await redisRateLimits({ url: TEST_REDIS_URL, keyPrefix: prefix, log }), await redisRateLimits({ url: TEST_REDIS_URL, keyPrefix: prefix, log }));
    return [opened[0], opened[1]];
  });

  it('a Redis that does not answer stops the start, naming REDIS_URL', async () => {
    await expect(redisRateLimits({ url: 'redis://127.0.0.1:1', keyPrefix: prefix, log })).rejects.toThrow(/^REDIS_URL: Redis does not answer \(.*ECONNREFUSED/);
  });

  afterAll(async () => {
    for (const l of opened) await l.close();
    await deleteKeys(prefix);
  });
});

describe('a server given a REDIS_URL that does not answer', () => {
  it('does not start, and says which variable and why, without the password', async () => {
    const err = await startTestServer({ env: { REDIS_URL: 'redis://:hunter2@127.0.0.1:1' } }).then(
      async (t) => {
        await t.close();
        return undefined;
      },
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/^REDIS_URL: Redis does not answer \(.*ECONNREFUSED/);
    expect(err!.message).not.toContain('hunter2');
  });
});
