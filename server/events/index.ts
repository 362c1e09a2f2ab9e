// Webhooks: the webhook operations (handlers.ts) and the worker that delivers the outbox's
// events to them (deliver.ts).
import type { Logger } from 'pino';
import type { Capability, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import { DeliveryWorker } from './deliver.js';
import { webhookHandlers, type WebhookOperation } from './handlers.js';
import type { Secrets } from '../secrets/index.js';
import { sealStoredSecrets } from './sealed-secrets.js';

export function webhooks(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  secrets: Secrets;
  /** Heard: deliveries written (the worker looks at once); told: each delivery attempt's
   *  end (tasks, composed before, wait for their events'). */
  signals: Pick<Signals, 'deliveriesWritten' | 'deliveryAttempted'>;
}): Capability<WebhookOperation, { webhookDeliveries: Pick<DeliveryWorker, 'stats'> }> {
  const log = d.log.child({ component: 'webhooks' });
  const worker = new DeliveryWorker({
    db: d.db,
    secrets: d.secrets,
    signals: d.signals,
    allowPrivate: d.config.allowPrivateNetworks,
    logger: { warn: (o, m) => log.warn(o, m), error: (o, m) => log.error(o, m) },
    concurrency: d.config.webhookDeliveryConcurrency,
  });
  return {
    name: 'webhooks',
    handlers: webhookHandlers({
      db: d.db,
      signals: d.signals,
      secrets: d.secrets,
      allowPrivate: d.config.allowPrivateNetworks,
      publicUrl: d.config.publicUrl,
      maxPerProject: d.config.webhookMaxPerProject,
    }),
    // Waits for deliveries in flight up to the shutdown grace.
    workers: [
      {
        start: async () => {
          const sealed = await sealStoredSecrets(d.db, d.secrets);
          if (sealed > 0) log.info({ webhooks: sealed }, 'sealed the signing secrets stored before secrets were sealed');
          await worker.start();
        },
        stop: () => worker.stop(d.config.shutdownGraceSeconds * 1000),
      },
    ],
    // The worker's counters, for /metrics.
    provides: { webhookDeliveries: { stats: () => worker.stats() } },
  };
}

// The console's "retry" of a delivery (no operation of the contract does it).
export { retryDelivery } from './webhooks-store.js';
