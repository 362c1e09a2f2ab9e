// bench/rate-limits: what counting the rate limits where every node sees them costs a
// session. POST /v1/sessions (served from the warm pool, the fastest creation there is, so
// the limiter's share is as large as it gets) on three server processes that differ only in
// RATE_LIMIT_STORE: memory (the reference: one node's own count), postgres and redis. All
// three run on PostgreSQL (a schema each), the sides take turns round by round; the overhead
// is the median of the round-by-round differences against memory. Then the limiter alone:
// take() on each store from this process, interleaved.
// Goal: the cluster's overhead per session ≤ 10 % at p50.
// Usage: pnpm exec tsx bench/rate-limits.ts [--rounds 60]   (needs DATABASE_URL; Redis at
// REDIS_URL or redis://127.0.0.1:6379)
import { loadavg } from 'node:os';
import pino from 'pino';
import { memoryRateLimits } from '../server/http/rate-limit/memory.js';
import { postgresRateLimits } from '../server/http/rate-limit/postgres.js';
import { redisRateLimits } from '../server/http/rate-limit/redis.js';
import type { RateLimits } from '../server/http/rate-limit/limiter.js';
import { openDb } from '../server/store/db.js';
import { migrate } from '../server/store/migrate.js';
import { withPostgresSchema } from '../server/store/pg-schema.js';
import { deleteKeys, testKeyPrefix } from '../server/testing/redis.js';
import { machine, ms, percentile, progress } from './machine.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 60;
const TAKES = 500;
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('bench/rate-limits needs DATABASE_URL (PostgreSQL)');
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = testKeyPrefix();
const stores = ['memory', 'postgres', 'redis'] as const;
type Store = (typeof stores)[number];
const body = JSON.stringify({ session: { recording: { active: false } } });

/** Runs fn with three fresh schemas, one per store. */
async function withSchemas<T>(fn: (urls: string[]) => Promise<T>, urls: string[] = []): Promise<T> {
  if (urls.length === stores.length) return fn(urls);
  return withPostgresSchema(databaseUrl!, 'bench_rl', (url) => withSchemas(fn, [...urls, url]));
}

async function waitWarm(server: ServerProcess): Promise<void> {
  for (;;) {
    const health = (await (await fetch(`${server.base}/healthz`)).json()) as { browsers: { warm: number } };
    if (health.browsers.warm > 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const load = async () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

console.log(`bench/rate-limits on ${machine()}; ${N} rounds, the sides taking turns, the order turning; load average ${await load()}`);

await withSchemas(async (urls) => {
  const servers = {} as Record<Store, ServerProcess>;
  try {
    for (const [i, store] of stores.entries()) {
      servers[store] = await startServerProcess({
        DATABASE_URL: urls[i]!,
        RATE_LIMIT_STORE: store,
        REDIS_URL: redisUrl,
        REDIS_KEY_PREFIX: prefix,
        BROWSER_POOL_SIZE: '1',
        SESSION_CREATE_RATE_PER_MINUTE: '100000',
      });
    }
    for (const store of stores) await waitWarm(servers[store]);
    let created: string | undefined;
    const side = (store: Store) => ({
      async run() {
        const res = await servers[store].request('/v1/sessions', { method: 'POST', body });
        const json = (await res.json()) as { data: { id: string } };
        if (res.status !== 200) throw new Error(`${store}: create answered ${res.status}: ${JSON.stringify(json)}`);
        created = json.data.id;
      },
      async between() {
        const end = await servers[store].request(`/v1/sessions/${created}`, { method: 'DELETE' });
        if (end.status !== 200) throw new Error(`${store}: end answered ${end.status}`);
        await waitWarm(servers[store]);
      },
    });
    // The sides take turns, the order turning each round (no side always follows another).
    // No wait for a quiet machine between turns: on a shared machine it is never quiet, and
    // the waits would leave room for few rounds; the paired differences below absorb drift.
    const times: Record<Store, number[]> = { memory: [], postgres: [], redis: [] };
    for (let i = 0; i < N; i++) {
      for (let j = 0; j < stores.length; j++) {
        const store = stores[(i + j) % stores.length]!;
        const s = side(store);
        const t = performance.now();
        await s.run();
        times[store].push(performance.now() - t);
        await s.between();
      }
      progress('memory / postgres / redis', i + 1, N);
    }
    const m50 = percentile(times.memory, 50);
    console.log(`POST /v1/sessions (warm pool), load average ${await load()}:`);
    for (const store of stores) {
      const [p50, p95] = [percentile(times[store], 50), percentile(times[store], 95)];
      if (store === 'memory') {
        console.log(`  ${store.padEnd(8)} p50 ${ms(p50)} p95 ${ms(p95)} (reference)`);
        continue;
      }
      // Round by round, this store's creation minus memory's: its median is the overhead
      // with the machine's drift taken out.
      const paired = percentile(
        times[store].map((t, i) => t - times.memory[i]!),
        50,
      );
      const over = (paired / m50) * 100;
      console.log(
        `  ${store.padEnd(8)} p50 ${ms(p50)} p95 ${ms(p95)} | p50 ratio ${(p50 / m50).toFixed(2)}x | median paired difference ${ms(paired)} = ${over.toFixed(1)} % of memory's p50 (goal ≤ 10 %: ${over <= 10 ? 'met' : 'NOT met'})`,
      );
    }
  } finally {
    for (const store of stores) await servers[store]?.stop();
  }

  // The limiter alone, from this process: one take() after another, the stores interleaved.
  const log = pino({ level: 'silent' });
  const db = await openDb({ databaseUrl: urls[1] });
  await migrate(db);
  const limits: Record<Store, RateLimits> = {
    memory: memoryRateLimits(),
    postgres: postgresRateLimits(db, log),
    redis: await redisRateLimits({ url: redisUrl, keyPrefix: prefix, log }),
  };
  const took: Record<Store, number[]> = { memory: [], postgres: [], redis: [] };
  const limiters = Object.fromEntries(stores.map((s) => [s, limits[s].limiter('bench', 60)])) as Record<Store, ReturnType<RateLimits['limiter']>>;
  for (let i = 0; i < TAKES; i++) {
    for (const store of stores) {
      // A key per 50 hits: most takes find a row with hits in it, some are refused.
      const key = `k${Math.floor(i / 50)}`;
      const t = performance.now();
      await limiters[store].take(key);
      took[store].push(performance.now() - t);
    }
  }
  console.log(`take() alone, ${TAKES} each, load average ${await load()}:`);
  for (const store of stores) console.log(`  ${store.padEnd(8)} p50 ${ms(percentile(took[store], 50))} p95 ${ms(percentile(took[store], 95))}`);
  await limits.redis.close();
  await db.close();
});
await deleteKeys(prefix);
