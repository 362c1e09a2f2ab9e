// STOPGAP until cluster-core's node lifecycle is merged: registers this node in `nodes` at
// start and heartbeats on a timer, so that routing and placement (router.ts) have live
// nodes to look up. At merge, delete this file and its two uses in router.ts (start/stop)
// in favour of cluster-core's registration, heartbeat, drain and death detection; nothing
// else depends on it. It does no death detection and no draining.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import { heartbeat, register } from './store.js';

const version = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface Presence {
  stop(): Promise<void>;
}

export async function startPresence(o: {
  db: Db;
  log: Logger;
  node: { id: string; internalUrl: string; capacity: number; running(): number };
  deadAfterSeconds: number;
}): Promise<Presence> {
  await register(o.db, { id: o.node.id, internalUrl: o.node.internalUrl, version, capacity: o.node.capacity });
  // Three beats within the dead-after time: one lost beat does not make the node look dead.
  const everyMs = Math.max(1_000, Math.min(5_000, (o.deadAfterSeconds * 1000) / 3));
  let beating: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    beating = heartbeat(o.db, o.node.id, o.node.running(), false).catch((err: Error) => o.log.warn({ err: err.message }, 'heartbeat failed'));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await beating;
    },
  };
}
