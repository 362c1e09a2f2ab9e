// GET /metrics: the Prometheus text format (prom-client), guarded by METRICS_TOKEN when one
// is set. The registry (registry.ts) is made by the assembly, which also feeds it every
// HTTP request; this capability adds what follows sessions (their hooks) and what is read
// when scraped (collectors.ts). Composed after the capabilities it reads.
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { sameToken } from '../auth/tokens.js';
import type { Db } from '../store/db.js';
import { addCollectors, type DeliveryCounts, type SessionsView } from './collectors.js';
import type { Metrics } from './registry.js';

export { Metrics, type RequestSample } from './registry.js';
export type { DeliveryCounts, SessionsView } from './collectors.js';
export { startTracing, type Tracing } from './tracing.js';

export function metricsEndpoint(d: {
  db: Db;
  config: ServiceConfig;
  metrics: Metrics;
  sessions: SessionsView;
  /** Webhooks' delivery worker, counted when scraped: composed after webhooks. */
  webhookDeliveries: { stats(): DeliveryCounts };
}): Capability {
  const { metrics } = d;
  metrics.setNode(d.sessions.nodeId);
  /** Chromium's pid (its process group) of each session running on this node. */
  const browserGroups = new Map<string, number>();
  addCollectors(metrics, {
    db: d.db,
    sessions: d.sessions,
    browserGroups: () => new Set(browserGroups.values()),
    deliveries: () => d.webhookDeliveries.stats(),
  });
  const token = d.config.metricsToken;

  return {
    name: 'metrics',
    routes(app) {
      app.get('/metrics', async (c) => {
        if (token !== undefined) {
          const m = /^Bearer +(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
          if (!m || !sameToken(m[1], token)) {
            return c.json({ error: { code: 401, message: 'Invalid or missing metrics token: send Authorization: Bearer $METRICS_TOKEN' } }, 401, {
              'WWW-Authenticate': 'Bearer',
            });
          }
        }
        return c.body(await metrics.registry.metrics(), 200, { 'content-type': metrics.registry.contentType });
      });
    },
    sessionHooks: {
      started(s) {
        browserGroups.set(s.id, s.browser.pid);
        // From the creation request (the row is written before the browser launches) to now.
        metrics.sessionStarted(Math.max(0, Date.now() - s.askedAt) / 1000);
      },
      async ended(s, end) {
        browserGroups.delete(s.id);
        metrics.sessionEnded(end.status, end.reason);
      },
    },
  };
}
