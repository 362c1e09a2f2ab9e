// Batch sessions: the operations (handlers.ts), sessions created in the background as batches
// of one (async-session.ts), and the worker that provisions their items through the
// SessionManager (worker.ts).
import type { Logger } from 'pino';
import type { Capability, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import type { NodeLoad, SessionLifecycle, SessionUrls } from '../sessions/index.js';
import { asyncSessionHandlers, type AsyncSessionHandlers } from './async-session.js';
import { batchHandlers, itemAnswer, type BatchHandlers } from './handlers.js';
import { BatchWorker } from './worker.js';

export function batches(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: NodeLoad & SessionLifecycle & SessionUrls;
  /** Told: a batch's end event written. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}): Capability<keyof BatchHandlers | keyof AsyncSessionHandlers> {
  const worker = new BatchWorker(d);
  return {
    name: 'batches',
    handlers: { ...batchHandlers({ ...d, worker }), ...asyncSessionHandlers({ ...d, worker, item: itemAnswer(d.sessions) }) },
    workers: [worker],
    recoverNode: (node) => worker.recoverNode(node),
  };
}
