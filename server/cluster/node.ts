// This node's life in the cluster: it registers at start and heartbeats every
// NODE_DEAD_AFTER_SECONDS / 5 with its browsers and whether it drains; every node on
// PostgreSQL runs the reaper, which claims dead the nodes that stopped heartbeating (one
// conditional UPDATE, so of survivors racing exactly one wins) and takes over what they
// left through every capability's recoverNode (sessions failed with browser_pod_not_found,
// task runs failed, batch items settled, pending profiles failed).
//
// Fast detection: each node holds a session-level advisory lock keyed by its id on one
// dedicated connection (not the pool). PostgreSQL releases it the moment that connection
// dies, so a survivor whose pg_try_advisory_lock on a node's key succeeds knows the node's
// connection is gone; after a confirmation (two heartbeat periods without a heartbeat) it
// claims the node without waiting for NODE_DEAD_AFTER_SECONDS. This needs a session-pooled
// connection: behind PgBouncer's transaction pooling the lock would outlive or skip the node.
//
// A node on PGlite runs alone: it registers and heartbeats (harmless, and its listing shows
// it) but runs no reaper: its database is its own, so no other node can be dead in it.
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { Logger } from 'pino';
import type { RecoverNode } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';

/** What the lifecycle needs of the SessionManager. */
export interface NodeSessions {
  readonly nodeId: string;
  /** Browsers running or starting here. */
  readonly busy: number;
  /** Refuses new sessions, and waits up to graceMs for the running ones to end. */
  drain(graceMs: number): Promise<void>;
  /** Ends every session here: a survivor failed them (this node was claimed dead). */
  abandonAll(): Promise<void>;
}

export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** How often a node heartbeats (and reaps): five beats in NODE_DEAD_AFTER_SECONDS. */
export const heartbeatPeriodMs = (deadAfterSeconds: number): number => Math.max(200, (deadAfterSeconds * 1000) / 5);

/** A node whose advisory lock was found free, and its heartbeat then. */
interface Suspect {
  heartbeatAt: Date;
  since: number;
}

export class NodeLifecycle {
  readonly id: string;
  private draining = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private lock: pg.Client | undefined;
  private readonly suspects = new Map<string, Suspect>();
  private readonly periodMs: number;

  constructor(private readonly d: { db: Db; config: ServiceConfig; log: Logger; sessions: NodeSessions; recoverNode: RecoverNode }) {
    this.id = d.sessions.nodeId;
    this.periodMs = heartbeatPeriodMs(d.config.nodeDeadAfterSeconds);
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /** Takes the node's lock (PostgreSQL), registers, and starts the heartbeat and the reaper. */
  async start(): Promise<void> {
    if (this.clustered) await this.takeLock();
    await this.register();
    this.timer = setInterval(() => void this.tick(), this.periodMs);
    this.timer.unref();
  }

  /** SIGTERM's first phase: tell the cluster (heartbeat with draining), refuse new sessions, and
   *  let the running ones finish for up to SHUTDOWN_GRACE_SECONDS. A node alone (no
   *  NODE_INTERNAL_URL) has no other node to send new sessions to: it ends them at once, as
   *  a single server always did. */
  async drain(): Promise<void> {
    this.draining = true;
    await this.beat();
    if (this.d.config.nodeInternalUrl === undefined) return;
    this.d.log.debug({ running: this.d.sessions.busy }, 'draining: the running sessions may finish');
    await this.d.sessions.drain(this.d.config.shutdownGraceSeconds * 1000);
    this.d.log.debug({ running: this.d.sessions.busy }, 'drained');
    await this.beat();
  }

  /** Last: the node leaves the table (not reported dead) once nothing of it is unfinished. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
    try {
      if (!(await store.leave(this.d.db, this.id))) this.d.log.warn({ nodeId: this.id }, 'left sessions unfinished: the other nodes will fail them');
    } finally {
      const lock = this.lock;
      this.lock = undefined;
      this.holdsLock = false;
      await lock?.end().catch(() => {});
    }
  }

  /** How many nodes are alive (this one included, when its heartbeat is fresh). */
  async liveCount(): Promise<number> {
    return (await store.liveNodes(this.d.db, this.d.config.nodeDeadAfterSeconds)).length;
  }

  /** Browsers the cluster may run at once: the MAX_CONCURRENT_BROWSERS of the live nodes
   *  that take sessions, summed; undefined for a node alone (no NODE_INTERNAL_URL: it places
   *  nothing elsewhere) or when none takes sessions. */
  async capacity(): Promise<number | undefined> {
    if (!this.d.config.nodeInternalUrl) return undefined;
    return store.clusterCapacity(this.d.db, this.d.config.nodeDeadAfterSeconds);
  }

  private get clustered(): boolean {
    return this.d.db.kind === 'postgres' && this.d.config.databaseUrl !== undefined;
  }

  private async register(): Promise<void> {
    const { config } = this.d;
    await store.register(this.d.db, { id: this.id, internalUrl: config.nodeInternalUrl, version: VERSION, capacity: config.maxConcurrentBrowsers });
  }

  private tick(): Promise<void> {
    // One at a time: a slow database must not pile up ticks.
    if (this.ticking) return this.ticking;
    this.ticking = (async () => {
      try {
        await this.beat();
        if (this.clustered && this.timer) await this.reap();
      } catch (err) {
        this.d.log.error({ err, nodeId: this.id }, 'cluster heartbeat or reaper failed');
      } finally {
        this.ticking = undefined;
      }
    })();
    return this.ticking;
  }

  private async beat(): Promise<void> {
    const r = await store.beat(this.d.db, this.id, this.d.sessions.busy, this.draining);
    if (r && !r.claimedDead) return;
    // Claimed dead while alive (cut off from the database longer than the limit), or the row
    // is gone: a survivor failed our sessions; close their browsers and join again.
    if (r?.claimedDead) {
      this.d.log.error({ nodeId: this.id }, 'this node was claimed dead by another node; ending its sessions');
      await this.d.sessions.abandonAll();
    }
    if (this.timer) await this.register();
  }

  private async reap(): Promise<void> {
    const { db, config } = this.d;
    // Heartbeat too old, or a sweep left unfinished by a survivor that died too.
    const sweepLeaseSeconds = Math.max(30, config.nodeDeadAfterSeconds * 4);
    for (const node of await store.claimDead(db, this.id, config.nodeDeadAfterSeconds, sweepLeaseSeconds)) await this.sweep(node, 'heartbeat too old');
    await this.lockedOut();
  }

  /** The advisory-lock look: nodes alive by their heartbeat whose connection is gone. */
  private async lockedOut(): Promise<void> {
    // Only a node that holds its own lock looks at others' (and the look needs the connection).
    if (!(await this.holdLock())) return;
    const others = await this.othersLocks();
    for (const gone of [...this.suspects.keys()]) if (!others.some((n) => n.id === gone)) this.suspects.delete(gone);
    for (const n of others) {
      if (!n.free) {
        this.suspects.delete(n.id);
        continue;
      }
      const seen = this.suspects.get(n.id);
      if (!seen || n.heartbeat_at.getTime() > seen.heartbeatAt.getTime()) {
        this.suspects.set(n.id, { heartbeatAt: n.heartbeat_at, since: Date.now() });
        continue;
      }
      // Free for two heartbeat periods, and no heartbeat since: its process is gone.
      if (Date.now() - seen.since < 2 * this.periodMs) continue;
      this.suspects.delete(n.id);
      const claimed = await store.claimSilent(this.d.db, n.id, seen.heartbeatAt);
      if (claimed) await this.sweep(claimed, 'connection gone');
    }
  }

  private async sweep(node: store.DeadNode, how: 'heartbeat too old' | 'connection gone'): Promise<void> {
    const { log } = this.d;
    log.warn({ nodeId: node.id, claimedAt: node.deadAt, how }, 'node dead: failing its sessions and releasing its claims');
    try {
      await this.d.recoverNode({ id: node.id, before: node.deadAt });
      await store.markSwept(this.d.db, node);
    } catch (err) {
      // Left unswept: a survivor takes it again after the sweep lease.
      log.error({ err, nodeId: node.id }, 'taking over a dead node failed');
    }
  }

  // The advisory lock, on a connection of its own -----------------------------------------

  /** Takes this node's lock at start. A survivor may hold the key for an instant (its look),
   *  and after a crash PostgreSQL may not yet have seen the old connection go: then the node
   *  starts anyway, and its ticks take the lock once it is free. */
  private async takeLock(): Promise<void> {
    for (let i = 0; i < 20 && !(await this.holdLock()); i++) await new Promise((r) => setTimeout(r, 100));
    if (!this.holdsLock)
      this.d.log.warn(
        { nodeId: this.id },
        'cluster lock of this NODE_ID is held elsewhere (a previous connection not yet gone, or another node with this id); retrying',
      );
  }

  /** Takes the lock if it is not held (the connection reopened when it died); answers whether it is held. */
  private async holdLock(): Promise<boolean> {
    if (this.holdsLock && this.lock) return true;
    if (!(await this.ensureLock())) return false;
    const [row] = (await this.lock!.query<{ ok: boolean }>(`SELECT pg_try_advisory_lock(${LOCK_SPACE}, ${keyOf('$1')}) AS ok`, [this.id])).rows;
    this.holdsLock = row?.ok === true;
    return this.holdsLock;
  }

  private holdsLock = false;

  /** The lock connection, (re)opened when it died; false when the database cannot be reached. */
  private async ensureLock(): Promise<boolean> {
    if (this.lock) return true;
    const client = new pg.Client({ connectionString: this.d.config.databaseUrl });
    client.on('error', (err) => {
      this.d.log.warn({ err: err.message }, 'cluster lock connection lost');
      // Our own lock went with it: taken again at the next tick.
      if (this.lock === client) {
        this.lock = undefined;
        this.holdsLock = false;
      }
    });
    try {
      await client.connect();
    } catch (err) {
      this.d.log.warn({ err: (err as Error).message }, 'cluster lock connection failed');
      await client.end().catch(() => {});
      return false;
    }
    this.lock = client;
    return true;
  }

  /**
   * Every other live node, and whether its lock is free: one statement for all of them (and
   * one to let go of the free ones), not a round trip each. One a node used to cost N-1
   * statements a tick: with 32 nodes, ~330 a second on the database for looks alone
   * (bench/control-plane, docs/operations/scaling.md).
   */
  private async othersLocks(): Promise<{ id: string; heartbeat_at: Date; free: boolean }[]> {
    const rows = (
      await this.lock!.query<{ id: string; heartbeat_at: Date; free: boolean }>(
        `SELECT id, heartbeat_at, pg_try_advisory_lock(${LOCK_SPACE}, ${keyOf('id')}) AS free
           FROM nodes WHERE id <> $1 AND dead_at IS NULL AND heartbeat_at > now() - make_interval(secs => $2)`,
        [this.id, this.d.config.nodeDeadAfterSeconds],
      )
    ).rows;
    const free = rows.filter((r) => r.free).map((r) => r.id);
    if (free.length) await this.lock!.query(`SELECT pg_advisory_unlock(${LOCK_SPACE}, ${keyOf('x')}) FROM unnest($1::text[]) AS x`, [free]);
    return rows;
  }
}

/** The advisory locks' key space (the first of the two int keys): the nodes'. */
const LOCK_SPACE = "hashtext('browser-service:node')";
/** A node's key: its id within the schema (tests and deployments sharing one database apart). */
const keyOf = (param: string) => `hashtext(current_schema() || '/' || ${param})`;
