// The cluster: this node's registration, heartbeat, reaper and drain (node.ts),
// the `nodes` table (store.ts), and the operator's listing, GET /admin/v1/nodes. Other
// capabilities see the cluster through ClusterNode: health shows `cluster`, billing its
// capacity.
import type { Logger } from 'pino';
import type { components } from '../../generated/types.js';
import type { Capability, RecoverNode } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import { NodeLifecycle, type NodeSessions } from './node.js';
import * as store from './store.js';

export { NodeLifecycle, type NodeSessions } from './node.js';

/** What /healthz and the assembly see of this node in the cluster. */
export interface ClusterNode {
  readonly id: string;
  readonly isDraining: boolean;
  /** Nodes whose heartbeat is fresh, this one included. */
  liveCount(): Promise<number>;
  /** Browsers the cluster may run at once; undefined for a node alone. */
  capacity(): Promise<number | undefined>;
  /** SIGTERM's first phase (see NodeLifecycle.drain). */
  drain(): Promise<void>;
}

export function cluster(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: NodeSessions;
  recoverNode: RecoverNode;
}): Capability<'adminListNodes', { cluster: ClusterNode }> {
  const node = new NodeLifecycle(d);
  return {
    name: 'cluster',
    handlers: {
      async adminListNodes() {
        const [{ now }] = await d.db.query<{ now: Date }>('SELECT now() AS now');
        const rows = await store.allNodes(d.db);
        return { status: 200, body: { data: rows.map((r) => listed(r, now, d.config.nodeDeadAfterSeconds)) } };
      },
    },
    provides: { cluster: node },
    start: () => node.start(),
    close: () => node.close(),
  };
}

function listed(r: store.NodeRow, now: Date, deadAfterSeconds: number): components['schemas']['AdminNode'] {
  return {
    id: r.id,
    internal_url: r.internal_url,
    version: r.version,
    capacity: r.capacity,
    running: r.running,
    draining: r.draining,
    started_at: r.started_at.toISOString(),
    heartbeat_at: r.heartbeat_at.toISOString(),
    status: store.statusOf(r, now, deadAfterSeconds),
  };
}
