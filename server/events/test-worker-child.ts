// A worker process for the kill -9 test (kill.test.ts): runs the delivery worker against
// DATA_DIR (PGlite) or DATABASE_URL, optionally emitting events as it goes, and prints
// one line per milestone on stdout. Not a test itself.
import { randomBytes } from 'node:crypto';
import { openDb } from '../store/db.js';
import { sealer } from '../secrets/index.js';
import { migrate } from '../store/migrate.js';
import { DeliveryWorker } from './deliver.js';
import { emitEvents } from '../outbox/emit.js';
import { createSignals } from '../capability/index.js';
import { sampleEventData } from './samples.js';

const env = process.env;
const db = await openDb({ databaseUrl: env.DATABASE_URL || undefined, dataDir: env.DATA_DIR });
await migrate(db);
/** The process's own signals, as a server's: its emits nudge its worker. */
const signals = createSignals();
const worker = new DeliveryWorker({
  db,
  signals,
  // The kill test's webhooks are inserted with plain secrets (read as stored before sealing).
  secrets: sealer(randomBytes(32)),
  allowPrivate: true,
  concurrency: Number(env.CONCURRENCY ?? 8),
  pollIntervalMs: 50,
  requestTimeoutMs: Number(env.REQUEST_TIMEOUT_MS ?? 1000),
  leaseMs: Number(env.LEASE_MS ?? 3000),
  retrySchedule: [200, 400, 800],
});
await worker.start();
process.stdout.write('ready\n');

// EMIT events, BULK to a transaction (emitEvents), 5 ms apart per event.
const emit = Number(env.EMIT ?? 0);
const bulk = Number(env.BULK ?? 1);
if (emit > 0) {
  void (async () => {
    for (let i = 0; i < emit; i += bulk) {
      const group = Array.from({ length: Math.min(bulk, emit - i) }, () => ({
        projectId: env.PROJECT_ID!,
        type: 'session.completed' as const,
        data: sampleEventData('session.completed'),
      }));
      const evs = await db.transaction((tx) => emitEvents(tx, signals, group));
      process.stdout.write(evs.map((ev) => `committed ${ev.id}\n`).join(''));
      await new Promise((r) => setTimeout(r, 5 * group.length));
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
