// The cluster: this node's registration, heartbeat, reaper and drain (node.ts),
// the `nodes` table (store.ts), and the operator's listing, GET /admin/v1/nodes. Other
// capabilities see the cluster through ClusterNode: health shows `cluster`, billing its
// capacity. Its routing (router.ts) is a capability of its own, `clusterRouting`: a
// middleware and an upgrade wrapper that send a request to the node that must answer it.
import type { Logger } from 'pino';
import type { components } from '../../generated/types.js';
import { findKey } from '../auth/api-keys.js';
import type { Capability, RecoverNode } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import { NodeLifecycle, type NodeSessions } from './node.js';
import { clusterRouter } from './router.js';
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
        const now = await store.databaseNow(d.db);
        const rows = await store.allNodes(d.db);
        return { status: 200, body: { data: rows.map((r) => listed(r, now, d.config.nodeDeadAfterSeconds)) } };
      },
    },
    provides: { cluster: node },
    start: () => node.start(),
    close: () => node.close(),
  };
}

/** What routing sees of this node's sessions (the session manager's NodeLoad and lookup). */
export interface RoutedSessions {
  readonly nodeId: string;
  readonly capacity: number;
  readonly running: number;
  get(id: string): unknown;
}

/** Any node serves any session: requests and upgrades go to the node that must answer them. */
export function clusterRouting(d: { db: Db; config: ServiceConfig; log: Logger; sessions: RoutedSessions; cluster: ClusterNode }): Capability {
  const { sessions } = d;
  const router = clusterRouter({
    ...d,
    // No room from the drain's first moment: it tells the cluster (a heartbeat) before the
    // manager stops taking sessions, and a creation placed here meanwhile would meet the
    // manager's refusal (503) after its first awaits instead of going to another node.
    node: {
      id: sessions.nodeId,
      capacity: () => (d.cluster.isDraining ? 0 : sessions.capacity),
      running: () => sessions.running,
      has: (id) => sessions.get(id) !== undefined,
    },
    authenticate: (key) => findKey(d.db, key),
  });
  return { name: 'cluster routing', middleware: router.middleware, aroundUpgrade: router.upgrade, start: () => router.start() };
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
