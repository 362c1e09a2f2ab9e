// GET /healthz: the database answers, how many browsers run and wait warm, whether their
// sandbox is on (off only by the operator's BROWSER_SANDBOX=off), their default memory and
// CPU caps ("off" where this server cannot make control groups), and this node in the cluster
// (its id, the nodes alive, whether it drains).
import type { Capability } from '../capability/index.js';
import type { ClusterNode } from '../cluster/index.js';
import type { NodeLoad } from '../sessions/index.js';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';

export function health(d: { db: Db; sessions: NodeLoad; cluster: ClusterNode; config: Pick<ServiceConfig, 'browserSandbox' | 'browserCaps'> }): Capability {
  return {
    name: 'health',
    routes(app) {
      app.get('/healthz', async (c) => {
        const caps = d.config.browserCaps;
        const limits = caps ? { memory_mb: caps.limits.memoryMb, cpus: caps.limits.cpus } : 'off';
        const browsers = { running: d.sessions.running, warm: d.sessions.warm, sandbox: d.config.browserSandbox, limits };
        const cluster = { node_id: d.cluster.id, live_nodes: null as number | null, draining: d.cluster.isDraining };
        try {
          cluster.live_nodes = await d.cluster.liveCount();
          return c.json({ status: 'ok', database: d.db.kind, browsers, cluster });
        } catch {
          return c.json({ status: 'unavailable', database: d.db.kind, browsers, cluster }, 503);
        }
      });
    },
  };
}
