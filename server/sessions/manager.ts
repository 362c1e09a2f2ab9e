// The lifecycle of browser sessions on this node, assembled: it keeps the table of the
// sessions running and starting here (live.ts), starts (sweeping what a killed server left)
// and stops, drains, ends sessions that time out, and answers what runs here. The steps
// are each a module of their own: creation (create.ts), the durable end (end.ts), warm
// browsers and reservations (warm.ts), and how clients reach a browser through the CDP
// proxy (cdp-access.ts). Every role of roles.ts is played here; the capabilities take one.
import { rmdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import type { EndReason, LeftNode, RunningSession } from '../capability/index.js';
import type { RateLimits } from '../http/rate-limit/index.js';
import type { ServiceProxyPool } from '../net/service-proxies.js';
import { browsersDirFor, installationId, sweepOrphans, type CdpProxy } from '../browser/index.js';
import { listPages, type PageTarget } from '../browser/cdp-client.js';
import { activePage, focused, PageSessions } from '../browser/pages.js';
import { CdpAccess } from './cdp-access.js';
import { SessionCreation, type CreateOptions, type CreateResult } from './create.js';
import { SessionEnds, type EndOptions } from './end.js';
import { SessionTable, type LifecycleDeps } from './live.js';
import type { SessionCreateBody } from './options.js';
import type { NodeLoad, SessionLifecycle, SessionLookup, SessionUrls, WarmSource } from './roles.js';
import * as store from './store.js';
import { WarmBrowsers, type WarmReservation } from './warm.js';

export interface SessionManagerOptions extends LifecycleDeps {
  serviceProxies: ServiceProxyPool;
  /** Where the per-key creation rate is counted (shared by the nodes of a cluster). */
  rateLimits: RateLimits;
}

const TICK_MS = 1_000;
/** How long shutdown waits for the database to record ends; the next start settles the rest. */
const STOP_RECORD_GRACE_MS = 10_000;

export class SessionManager implements SessionLookup, SessionLifecycle, SessionUrls, NodeLoad, WarmSource {
  readonly nodeId: string;
  private readonly table = new SessionTable();
  private readonly access: CdpAccess;
  private readonly warmBrowsers: WarmBrowsers;
  private readonly ends: SessionEnds;
  private readonly creation: SessionCreation;
  private readonly browsersDir: string;
  private tick: NodeJS.Timeout | undefined;

  constructor(private readonly o: SessionManagerOptions) {
    const { config } = o;
    const table = this.table;
    // Host and installation: a restart of the same node recognises the sessions it left
    // behind, a second node does not take them.
    this.nodeId = config.nodeId ?? `${hostname()}:${installationId(config.dataDir)}`;
    this.browsersDir = browsersDirFor(config.dataDir);
    this.access = new CdpAccess({ ...o, table, reservation: (id) => this.warmBrowsers.get(id) });
    const cdp = this.access;
    this.warmBrowsers = new WarmBrowsers({ ...o, browsersDir: this.browsersDir, table, cdp });
    this.ends = new SessionEnds({ ...o, table, cdp });
    const creationRate = o.rateLimits.limiter('session_create', config.sessionCreateRatePerMinute);
    this.creation = new SessionCreation({
      ...o,
      creationRate,
      nodeId: this.nodeId,
      browsersDir: this.browsersDir,
      table,
      warm: this.warmBrowsers,
      cdp,
      ends: this.ends,
    });
  }

  /** The CDP proxy: the sessions capability hands it the WebSocket upgrades. */
  get cdpProxy(): CdpProxy {
    return this.access.proxy;
  }

  /** Sweeps what a killed predecessor left, fails its sessions, and starts the timers. */
  async start(): Promise<void> {
    const swept = await sweepOrphans(this.browsersDir, this.o.log);
    if (swept.length) this.o.log.warn({ swept: swept.length }, 'removed browsers left by a previous run');
    await this.failSessionsOf({ id: this.nodeId });
    this.tick = setInterval(() => void this.checkTimeouts(), TICK_MS);
    this.tick.unref();
  }

  /** The sessions a node left unfinished: failed, each once (end.ts). */
  failSessionsOf(node: LeftNode): Promise<number> {
    return this.ends.failSessionsOf(node);
  }

  // Node load.

  get running(): number {
    return this.table.live.size;
  }

  /** Warm browsers ready in the pool. */
  get warm(): number {
    return this.warmBrowsers.available;
  }

  /** Browsers that may still start before the concurrent-browser limit; none while draining,
   *  so the batch and task workers claim nothing more here. */
  get capacity(): number {
    if (this.table.draining) return 0;
    return Math.max(0, this.o.config.maxConcurrentBrowsers - this.table.busy);
  }

  /** Browsers running or starting here (what a heartbeat reports). */
  get busy(): number {
    return this.table.busy;
  }

  get isDraining(): boolean {
    return this.table.draining;
  }

  // Warm source.

  /** A warm browser set aside for one session to come (warm.ts), or undefined. */
  reserveWarm(): WarmReservation | undefined {
    return this.warmBrowsers.reserve();
  }

  whenWarm(): Promise<void> {
    return this.warmBrowsers.whenWarm();
  }

  reservedFits(body: SessionCreateBody | undefined): boolean {
    return this.warmBrowsers.reservedFits(body);
  }

  // Lifecycle.

  validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> {
    return this.creation.validate(projectId, body);
  }

  create(owner: { projectId: string; apiKeyId: string }, body: SessionCreateBody | undefined, options: CreateOptions = {}): Promise<CreateResult> {
    return this.creation.create(owner, body, options);
  }

  end(id: string, status: 'completed' | 'failed', reason: EndReason, options: EndOptions = {}): Promise<store.SessionRow | undefined> {
    return this.ends.end(id, status, reason, options);
  }

  // Lookup.

  /** A session running on this node, for the capabilities that act on it. */
  get(id: string): RunningSession | undefined {
    return this.table.running(id);
  }

  /** The project's sessions running on this node, oldest first. */
  runningOf(projectId: string): RunningSession[] {
    return [...this.table.live.values()].filter((s) => s.projectId === projectId && !s.ending).sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * The project's session running here, for an operation on it; or why not, as the answer
   * the operation gives: 404 for a session the project does not have, 409 for one that is
   * not running (still starting, or ended).
   */
  async lookup(projectId: string, id: string): Promise<RunningSession | { status: 404 | 409; message: string }> {
    const s = this.get(id);
    if (s && s.projectId === projectId) return s;
    const row = await store.getSession(this.o.db, projectId, id);
    if (!row) return { status: 404, message: 'Session not found' };
    return { status: 409, message: row.status === 'starting' ? 'Session is still starting' : 'Session is not running' };
  }

  /**
   * Activity from input, a live-view viewer, or a server-side client of the browser (the MCP
   * server's, which talks to the browser directly): CDP traffic through the proxy is counted
   * there. A screenshot is a step that is billed as one.
   */
  touch(id: string, kind: 'input' | 'liveview' | 'screenshot'): boolean {
    const s = this.table.running(id);
    if (!s) return false;
    s.lastActivity = Date.now();
    if (kind !== 'liveview') s.steps++;
    if (kind === 'screenshot') s.screenshots++;
    return true;
  }

  async pages(id: string): Promise<(PageTarget & { active: boolean })[] | undefined> {
    const s = this.table.running(id);
    if (!s) return undefined;
    // Target.getTargets lists pages in creation order: the page in front is the one whose
    // document is visible (browser/pages.ts).
    const sessions = new PageSessions(s.cdp);
    try {
      const [pages, front] = await Promise.all([listPages(s.cdp), activePage(s.cdp, sessions)]);
      // A headless browser gives each tab a client opens a window of its own, all visible:
      // the one brought to front is the one with the focus.
      const withFocus = (await Promise.all(pages.map((p) => focused(sessions, p.targetId)))).flatMap((f, i) => (f ? [pages[i]!.targetId] : []));
      const active = withFocus.length === 1 ? withFocus[0] : front?.targetId;
      return pages.map((p) => ({ ...p, active: p.targetId === active }));
    } finally {
      await sessions.close();
    }
  }

  // URLs (cdp-access.ts).

  browserEndpoint(id: string, token: string): { wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized' {
    return this.access.browserEndpoint(id, token);
  }

  browserEndpointByKey(id: string, apiKey: string): Promise<{ wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized'> {
    return this.access.browserEndpointByKey(id, apiKey);
  }

  cdpUrlOf(id: string): string | undefined {
    return this.access.cdpUrlOf(id);
  }

  cdpUrl(id: string, token: string): string {
    return this.access.cdpUrl(id, token);
  }

  liveViewUrl(id: string, token: string): string {
    return this.access.liveViewUrl(id, token);
  }

  // Drain, stop and time-outs.

  /**
   * A graceful stop's first phase: new sessions are refused (503, so a load balancer's retry
   * or the client goes to another node) while the running ones go on, up to graceMs, for
   * their clients to finish them. stop() then ends what is left.
   */
  async drain(graceMs: number): Promise<void> {
    this.table.draining = true;
    await this.warmBrowsers.releaseAll();
    const deadline = Date.now() + graceMs;
    while (this.busy > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(200, Math.max(1, deadline - Date.now()))));
  }

  /** This node was claimed dead by another while it still ran (cut off from the database
   *  longer than NODE_DEAD_AFTER_SECONDS): its sessions were failed there, with their events;
   *  close their browsers here (their rows are ended already, so no second event). */
  async abandonAll(): Promise<void> {
    await Promise.all(this.ids().map((id) => this.end(id, 'failed', 'browser_pod_not_found')));
  }

  /** Graceful shutdown: refuse new work, end every session, close the pool. */
  async stop(): Promise<void> {
    const { table, ends } = this;
    if (table.stopped) return;
    table.stopped = true;
    clearInterval(this.tick);
    const reservations = this.warmBrowsers.releaseAll();
    const ending = Promise.allSettled(this.ids().map((id) => this.end(id, 'failed', 'server_shutdown')));
    // Browsers close at once; ends the database cannot take (it is down) are waited for a
    // while, then left to the next start, which fails the sessions this node left running.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([ending, new Promise((r) => (grace = setTimeout(r, STOP_RECORD_GRACE_MS)))]);
    clearTimeout(grace);
    ends.giveUp();
    const left = ends.unrecordedCount;
    await ending;
    await ends.settled();
    if (left > 0) this.o.log.warn({ sessions: left }, 'ends not recorded at shutdown (database unavailable): the next start fails these sessions');
    // The launches aborted above are closed by their create(): wait for that (bounded).
    for (let i = 0; table.starting.size > 0 && i < 300; i++) await new Promise((r) => setTimeout(r, 100));
    await ends.afterEnds();
    await reservations;
    await this.warmBrowsers.close();
    this.access.proxy.close();
    // The browsers directory itself, once empty (rmdir refuses otherwise): nothing of this
    // server stays in the temporary directory.
    await rmdir(this.browsersDir).catch(() => {});
  }

  /** Every session starting or running here. */
  private ids(): string[] {
    return [...this.table.starting.keys(), ...this.table.live.keys()];
  }

  private async checkTimeouts(): Promise<void> {
    const now = Date.now();
    for (const s of this.table.live.values()) {
      if (s.ending) continue;
      const { maxDurationMs, idleTimeoutMs } = s.options;
      if (maxDurationMs !== undefined && now - s.createdAt >= maxDurationMs) this.ends.endUnattended(s.id, 'completed', 'max_duration');
      else if (idleTimeoutMs !== undefined && now - s.lastActivity >= idleTimeoutMs) this.ends.endUnattended(s.id, 'completed', 'idle_timeout');
    }
  }
}
