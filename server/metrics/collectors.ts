// Series read when /metrics is scraped: the state of this node (browsers running and warm,
// their CPU and memory, the database pool, webhook deliveries since start) and of the
// queues every node shares in the database (webhook backlog, batch items waiting).
import { Counter, Gauge } from 'prom-client';
import { groupUsage } from '../browser/index.js';
import type { Db } from '../store/db.js';
import { PREFIX, type Metrics } from './registry.js';

/** What the metrics read of the sessions capability (its SessionManager fits). */
export interface SessionsView {
  readonly nodeId: string;
  readonly running: number;
  readonly warm: number;
}

/** The webhook delivery worker's counters since this process started. */
export interface DeliveryCounts {
  succeeded: number;
  failed: number;
  dead: number;
  inFlight: number;
}

export interface Sources {
  db: Db;
  sessions: SessionsView;
  /** Process groups of the session browsers running on this node (Chromium's pid leads its group). */
  browserGroups(): ReadonlySet<number>;
  deliveries?(): DeliveryCounts;
}

export function addCollectors(m: Metrics, s: Sources): void {
  const registers = [m.registry];
  new Gauge({
    name: `${PREFIX}sessions_running`,
    help: 'Sessions whose browser runs on this node.',
    registers,
    collect() {
      this.set(s.sessions.running);
    },
  });
  new Gauge({
    name: `${PREFIX}browser_pool_warm`,
    help: 'Pre-launched browsers waiting in the warm pool.',
    registers,
    collect() {
      this.set(s.sessions.warm);
    },
  });

  // One /proc pass per scrape serves the three (they are collected together), redone when
  // the browsers running changed.
  let usage: { at: number; groups: string; value: ReturnType<typeof groupUsage> } | undefined;
  const browsers = () => {
    const set = s.browserGroups();
    const groups = [...set].sort().join(',');
    if (!usage || usage.groups !== groups || Date.now() - usage.at > 250) usage = { at: Date.now(), groups, value: groupUsage(set) };
    return usage.value;
  };
  new Gauge({
    name: `${PREFIX}session_browsers_cpu_seconds`,
    help: "CPU time used so far by the running session browsers' processes, together (it drops when a browser ends: use rate() over a steady set, or per scrape deltas).",
    registers,
    collect() {
      this.set(browsers().cpuSeconds);
    },
  });
  new Gauge({
    name: `${PREFIX}session_browsers_memory_bytes`,
    help: "Resident memory of the running session browsers' processes, together (shared pages counted in each process).",
    registers,
    collect() {
      this.set(browsers().rssBytes);
    },
  });
  new Gauge({
    name: `${PREFIX}session_browsers_processes`,
    help: 'Processes of the running session browsers.',
    registers,
    collect() {
      this.set(browsers().processes);
    },
  });

  if (s.deliveries) {
    const deliveries = s.deliveries;
    new Counter({
      name: `${PREFIX}webhook_deliveries_total`,
      help: 'Webhook delivery attempts this node recorded since it started, by outcome: succeeded, failed (another attempt is scheduled), dead (the last attempt failed).',
      labelNames: ['outcome'],
      registers,
      collect() {
        const c = deliveries();
        this.reset();
        this.inc({ outcome: 'succeeded' }, c.succeeded);
        this.inc({ outcome: 'failed' }, c.failed);
        this.inc({ outcome: 'dead' }, c.dead);
      },
    });
    new Gauge({
      name: `${PREFIX}webhook_deliveries_in_flight`,
      help: 'Webhook requests this node is sending now.',
      registers,
      collect() {
        this.set(deliveries().inFlight);
      },
    });
  }
  new Gauge({
    name: `${PREFIX}webhook_deliveries_due`,
    help: 'Webhook delivery attempts due now and not yet sent, over every node (the backlog).',
    registers,
    async collect() {
      const [{ n }] = await s.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending' AND scheduled_at <= now()`);
      this.set(n);
    },
  });
  new Gauge({
    name: `${PREFIX}batch_items_waiting`,
    help: 'Batch items waiting for a browser, over every node.',
    registers,
    async collect() {
      // Items not yet claimed have no row (next_index .. total_requests - 1); claimed ones
      // put back in the queue are rows in status pending.
      const [{ n }] = await s.db.query<{ n: number }>(
        `SELECT (SELECT coalesce(sum(total_requests - next_index), 0) FROM batches WHERE status = 'pending' AND unclaimed_outcome IS NULL)
              + (SELECT count(*) FROM batch_items WHERE status = 'pending') AS n`,
      );
      this.set(Number(n));
    },
  });

  const pool = s.db.poolStats?.bind(s.db);
  if (pool) {
    new Gauge({
      name: `${PREFIX}db_pool_connections`,
      help: "This node's PostgreSQL connections, by state: in_use, idle, and max (the pool's size).",
      labelNames: ['state'],
      registers,
      collect() {
        const p = pool();
        this.set({ state: 'in_use' }, p.total - p.idle);
        this.set({ state: 'idle' }, p.idle);
        this.set({ state: 'max' }, p.max);
      },
    });
    new Gauge({
      name: `${PREFIX}db_pool_waiting`,
      help: 'Queries waiting for a free PostgreSQL connection on this node.',
      registers,
      collect() {
        this.set(pool().waiting);
      },
    });
  }
}
