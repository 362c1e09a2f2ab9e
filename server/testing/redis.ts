// Redis for tests: the local server (it answers on this machine and in CI), a key prefix of
// each test's own, and the removal of every key under it afterwards.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether Redis answers; when not, says so once on stderr so the skip has a reason. */
export async function redisAnswers(what: string): Promise<boolean> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, connectTimeout: 1_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch {
    console.warn(`${what}: skipped, Redis does not answer at ${TEST_REDIS_URL}`);
    return false;
  } finally {
    redis.disconnect();
  }
}

/** A fresh prefix for REDIS_KEY_PREFIX. */
export function testKeyPrefix(): string {
  return `test-${randomBytes(6).toString('hex')}:`;
}

/** Deletes every key under `prefix`. */
export async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
