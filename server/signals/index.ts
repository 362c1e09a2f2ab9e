// Event coordination: a named value one process posts and another awaits with a time-out
// (`/v1/events/{event_name}`), per project, across the nodes of one database. Not the
// webhooks' events (server/events/): nothing here leaves the service.
import type { Logger } from 'pino';
import { Gauge } from 'prom-client';
import { PollLoop, type Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import type { Metrics } from '../metrics/index.js';
import { signalHandlers, type SignalOperation } from './handlers.js';
import * as store from './store.js';
import { Wakeups } from './wakeups.js';

/** Expired and long-taken values are dropped this often; a dropped one is never answered anyway. */
const SWEEP_MS = 60_000;

export function signals(d: { db: Db; config: ServiceConfig; log: Logger; secrets: Secrets; metrics: Metrics }): Capability<SignalOperation> {
  const wakeups = new Wakeups();
  // Each wait polls the database: how many run tells the operator what that costs.
  new Gauge({
    name: 'cloud_browser_event_waits',
    help: 'Requests waiting for an event (POST /v1/events/{event_name}/wait) on this node.',
    registers: [d.metrics.registry],
    collect() {
      this.set(wakeups.size);
    },
  });
  const sweeper = new PollLoop({
    name: 'event signal sweep',
    log: d.log,
    busyMs: 1_000,
    idleMs: SWEEP_MS,
    tick: async () => {
      const dropped = await store.sweep(d.db);
      if (dropped > 0) d.log.debug({ dropped }, 'event signals dropped');
      return false;
    },
  });
  return {
    name: 'signals',
    handlers: signalHandlers({
      db: d.db,
      secrets: d.secrets,
      wakeups,
      retentionSeconds: d.config.eventRetentionSeconds,
      maxPendingPerProject: d.config.eventMaxPendingPerProject,
    }),
    workers: [
      {
        start: async () => sweeper.start(),
        stop: async () => void (await sweeper.stop()),
      },
    ],
  };
}
