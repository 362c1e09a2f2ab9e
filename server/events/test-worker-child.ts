// A worker process for the kill -9 test (kill.test.ts): runs the delivery worker against
// DATA_DIR (PGlite) or DATABASE_URL, optionally emitting events as it goes, and prints
// one line per milestone on stdout. Not a test itself.
import { openDb } from '../store/db.js';
import { migrate } from '../store/migrate.js';
import { DeliveryWorker } from './deliver.js';
import { emitEvent } from '../outbox/emit.js';
import { sampleEventData } from './samples.js';

const env = process.env;
const db = await openDb({ databaseUrl: env.DATABASE_URL || undefined, dataDir: env.DATA_DIR });
await migrate(db);
const worker = new DeliveryWorker({
  db,
  allowPrivate: true,
  concurrency: Number(env.CONCURRENCY ?? 8),
  pollIntervalMs: 50,
  requestTimeoutMs: Number(env.REQUEST_TIMEOUT_MS ?? 1000),
  leaseMs: Number(env.LEASE_MS ?? 3000),
  retrySchedule: [200, 400, 800],
});
await worker.start();
process.stdout.write('ready\n');

const emit = Number(env.EMIT ?? 0);
if (emit > 0) {
  void (async () => {
    for (let i = 0; i < emit; i++) {
      const ev = await db.transaction((tx) => emitEvent(tx, env.PROJECT_ID!, 'session.completed', sampleEventData('session.completed')));
      process.stdout.write(`committed ${ev.id}\n`);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
}

if (env.EXIT_WHEN_DONE) {
  for (;;) {
    await new Promise((r) => setTimeout(r, 100));
    const [{ n }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`);
    if (n === 0) break;
  }
  await worker.stop(5000);
  await db.close();
  process.stdout.write(`done ${JSON.stringify(worker.stats())}\n`);
  process.exit(0);
}
