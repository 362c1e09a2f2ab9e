// The delivery worker's options: what an operator or a test may set, and the defaults the
// worker runs with when they do not.
import type { Signals } from '../capability/index.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from './retry.js';

export interface DeliveryLogger {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface DeliveryWorkerOptions {
  db: Db;
  /** Opens the webhooks' sealed signing secrets (sealed-secrets.ts). */
  secrets: Secrets;
  /** The server's signals: deliveries written nudge the worker; each attempt's end is told
   *  (a task run holds its teardown until its event's first). */
  signals: Pick<Signals, 'deliveriesWritten' | 'deliveryAttempted'>;
  /** ALLOW_PRIVATE_NETWORKS: deliver to private, loopback and link-local addresses. */
  allowPrivate: boolean;
  /** Requests in flight at most (WEBHOOK_DELIVERY_CONCURRENCY). Default 64. */
  concurrency?: number;
  /** Requests in flight to one webhook at most. Default 8. */
  perWebhookConcurrency?: number;
  /** The same for a webhook that was slow (timed out or answered after 5 s). Default 2. */
  slowWebhookConcurrency?: number;
  /** Deadline of one attempt. Default 10 000. */
  requestTimeoutMs?: number;
  /** Response body bytes read at most. Default 64 KiB. */
  maxResponseBytes?: number;
  /** Response body bytes stored with the attempt. Default 1 KiB. */
  keepResponseBytes?: number;
  /** How often to look for due work besides nudges. Default 1000. */
  pollIntervalMs?: number;
  /** How long a claimed row stays leased; must exceed requestTimeoutMs. Default 60 000. */
  leaseMs?: number;
  /** Delays before attempts 2, 3, ...; default DEFAULT_RETRY_SCHEDULE_MS (≈ 23.6 h in all). */
  retrySchedule?: readonly number[];
  /** Jitter source, for tests. */
  random?: () => number;
  /** Names this worker's leases. Default a random id. */
  nodeId?: string;
  /**
   * Clear every lease at start. Right only when no other worker can use the database,
   * which is the case for PGlite (one process owns DATA_DIR); default: db.kind === 'pglite'.
   */
  releaseLeasesOnStart?: boolean;
  userAgent?: string;
  logger?: DeliveryLogger;
}

export type ResolvedOptions = Required<Omit<DeliveryWorkerOptions, 'db' | 'secrets' | 'signals' | 'logger' | 'random' | 'nodeId'>> & {
  random: () => number;
};

export function resolveOptions(options: DeliveryWorkerOptions): ResolvedOptions {
  const o: ResolvedOptions = {
    allowPrivate: options.allowPrivate,
    concurrency: options.concurrency ?? 64,
    perWebhookConcurrency: options.perWebhookConcurrency ?? 8,
    slowWebhookConcurrency: options.slowWebhookConcurrency ?? 2,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    maxResponseBytes: options.maxResponseBytes ?? 64 * 1024,
    keepResponseBytes: options.keepResponseBytes ?? 1024,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    leaseMs: options.leaseMs ?? 60_000,
    retrySchedule: options.retrySchedule ?? DEFAULT_RETRY_SCHEDULE_MS,
    releaseLeasesOnStart: options.releaseLeasesOnStart ?? options.db.kind === 'pglite',
    userAgent: options.userAgent ?? 'cloud-browser-webhooks/1.0',
    random: options.random ?? Math.random,
  };
  if (o.leaseMs < 2 * o.requestTimeoutMs + 1000) {
    throw new RangeError('leaseMs must be at least twice requestTimeoutMs plus a second');
  }
  return o;
}
