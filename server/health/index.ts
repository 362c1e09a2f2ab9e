// GET /healthz: the database answers, how many browsers run and wait warm, whether their
// sandbox is on (off only by the operator's BROWSER_SANDBOX=off), and this node in the cluster
// (its id, the nodes alive, whether it drains).
import type { Capability } from '../capability/index.js';
import type { ClusterNode } from '../cluster/index.js';
import type { NodeLoad } from '../sessions/index.js';
import type { Db } from '../store/db.js';
import type { Config } from '../config/config.js';

export function health(d: { db: Db; sessions: NodeLoad; cluster: ClusterNode; config: Pick<Config, 'browserSandbox'> }): Capability {
  return {
    name: 'health',
    routes(app) {
      app.get('/healthz', async (c) => {
        const browsers = { running: d.sessions.running, warm: d.sessions.warm, sandbox: d.config.browserSandbox };
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
