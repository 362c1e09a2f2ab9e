// The lifecycle of browser sessions on this node: create (warm or cold), watch (idle and
// maximum durations, a browser that dies), end (every path: API, timeout, crash, shutdown)
// and recover (what a killed server left). Beside it: what a create body may not ask for
// (refusal.ts), a session's browser behind its metered proxy (session-browser.ts), and the
// end's one transaction, row and event together (record-end.ts), which commits while the
// browser, its traffic proxy and its root are torn down.
import { randomBytes, randomUUID } from 'node:crypto';
import { rmdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { trace } from '@opentelemetry/api';
import { findKey } from '../auth/api-keys.js';
import { sameToken } from '../auth/tokens.js';
import type { EndReason, LeftNode, RunningSession, SessionEnd, SessionHooks, SessionOptions } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { refuseUnpaid } from '../credits/account.js';
import type { RateLimiter, RateLimits } from '../http/rate-limit/index.js';
import type { ServiceProxyPool } from '../net/service-proxies.js';
import type { TrafficProxy } from '../net/traffic-proxy.js';
import type { Db } from '../store/db.js';
import { isDatabaseUnavailable, untilCommitted, type DatabaseUnavailableError } from '../store/unavailable.js';
import {
  BrowserPool,
  DEFAULT_LAUNCH_OPTIONS,
  browsersDirFor,
  closeMeteredBrowser,
  createCdpProxy,
  downloadsDirOf,
  rootPaths,
  installationId,
  sweepOrphans,
  turnAdblockOff,
  type CdpProxy,
  type CdpTarget,
  type RunningBrowser,
} from '../browser/index.js';
import { CdpClient, listPages, navigate, type PageTarget } from '../browser/cdp-client.js';
import { activePage, focused, PageSessions } from '../browser/pages.js';
import { fitsWarmPool, normalize, storedConfiguration, type LaunchOptions, type SessionCreateBody } from './options.js';
import { EndRecorder, recordEnds, type SessionUsage } from './record-end.js';
import { refusal } from './refusal.js';
import { launchSessionBrowser, type SessionBrowser } from './session-browser.js';
import * as store from './store.js';
import { sessionUpstream } from './upstream.js';
import { spanned, tracer } from '../tracing.js';

interface LiveSession extends RunningSession {
  id: string;
  projectId: string;
  cdpToken: string;
  liveViewToken: string;
  options: SessionOptions;
  browser: RunningBrowser;
  traffic: TrafficProxy;
  cdp: CdpClient;
  createdAt: number;
  lastActivity: number;
  steps: number;
  screenshots: number;
  /** A CDP client sent Browser.close: the browser's exit that follows is a clean end. */
  closeRequested: boolean;
  ending?: Promise<store.SessionRow | undefined>;
}

export type CreateResult =
  /** onReserved: the session is on the reserved browser (CreateOptions.reserved). */
  | { ok: true; id: string; cdpUrl: string; liveViewUrl: string; onReserved?: boolean }
  | { ok: false; status: 400 | 402 | 429 | 500 | 503; message: string; retryAfterSeconds?: number };

/** For callers inside the server (batch items): they are not held to the per-key creation rate. */
export interface CreateOptions {
  internal?: boolean;
  /**
   * The id of a reservation (reserveWarm): the session is that id, with that CDP token, on
   * that browser, when the body is served by it (servedByReserved); otherwise, and whenever
   * the creation fails, the reserved browser is ended (never given to anything else).
   */
  reserved?: string;
  /** The id to give the session (a batch item chooses it before the session exists). */
  sessionId?: string;
  batchId?: string;
}

/** What the CDP proxy counts of a browser's traffic: a session's, or a reservation's until it is one. */
interface Counted {
  lastActivity: number;
  steps: number;
  screenshots: number;
  closeRequested: boolean;
}

/**
 * A warm browser taken from the pool for one future session (a task run's warm pair): its
 * id and CDP token are the session's to be, so that a client (the run's sandbox) can connect
 * through the CDP proxy, as to the session, before the session exists. Not a session: no
 * row, no event, nothing billed, not counted against the browser limit (as a pooled browser
 * is not). It becomes the session (create with CreateOptions.reserved) or is ended.
 */
interface Reservation extends Counted {
  id: string;
  cdpToken: string;
  sb: SessionBrowser;
  /** The server's own CDP connection to it, opened ahead too (undefined: it failed; the session opens one). */
  cdp: Promise<CdpClient | undefined>;
  /** The session it became, once it did: its traffic is counted there from then on. */
  live?: LiveSession;
  gone: () => void;
}

/** What the holder of a reservation has of it. */
export interface WarmReservation {
  /** The id the session will have. */
  sessionId: string;
  /** The session's cdp_url to be: reachable through the CDP proxy from now. */
  cdpUrl: string;
  /** Resolves when it ended without becoming a session (released, its browser died, the server stops). */
  lost: Promise<void>;
  /** Ends it unless it became a session; resolves once its browser is gone. */
  release(): Promise<void>;
}

/** How a session was asked to end; the abort reason of a launch that end() stops. */
interface EndRequest {
  status: 'completed' | 'failed';
  reason: EndReason;
  deleted: boolean;
}

export interface SessionManagerOptions {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  /** The composed capabilities' part in every session's life. */
  sessionHooks: SessionHooks;
  serviceProxies: ServiceProxyPool;
  /** Where the per-key creation rate is counted (shared by the nodes of a cluster). */
  rateLimits: RateLimits;
}

const TICK_MS = 1_000;
/** How long shutdown waits for the database to record ends; the next start settles the rest. */
const STOP_RECORD_GRACE_MS = 10_000;

export class SessionManager {
  readonly nodeId: string;
  readonly cdpProxy: CdpProxy;
  private readonly live = new Map<string, LiveSession>();
  /** ended hooks still running (recordings being encoded): shutdown waits for them. */
  private readonly afterEnd = new Set<Promise<void>>();
  /** Sessions whose browser is being launched, by id: end() and stop() abort them. */
  private readonly starting = new Map<string, AbortController>();
  /**
   * Ends not recorded yet (the database is unavailable), by session id: each is retried until
   * it commits, and a second end() of the session waits for the same one, so a session ends
   * once, with the usage read when its browser closed.
   */
  private readonly unrecorded = new Map<string, Promise<store.SessionRow | undefined>>();
  /** Why the last attempt to record a session's end failed, while its retries go on. */
  private readonly recordFailing = new Map<string, DatabaseUnavailableError>();
  /** Callers of end() that answer at once (answerNow) and wait to hear of such a failure. */
  private readonly failWaiters = new Map<string, Set<(err: DatabaseUnavailableError) => void>>();
  /** Aborted when shutdown stops waiting for the database. */
  private readonly giveUp = new AbortController();
  private readonly pool: BrowserPool<SessionBrowser> | undefined;
  /** Warm browsers set aside for sessions to come (reserveWarm), by the session's id. */
  private readonly reserved = new Map<string, Reservation>();
  private readonly creationRate: RateLimiter;
  /** Ends asked for at the same moment (shutdown, a timeout sweep) commit together. */
  private readonly ends: EndRecorder;
  private readonly browsersDir: string;
  private tick: NodeJS.Timeout | undefined;
  private stopped = false;
  /** SIGTERM received (drain): no new session here, the running ones may finish. */
  private draining = false;

  constructor(private readonly o: SessionManagerOptions) {
    const { config, log } = o;
    // Host and installation: a restart of the same node recognises the sessions it left
    // behind, a second node does not take them.
    this.nodeId = config.nodeId ?? `${hostname()}:${installationId(config.dataDir)}`;
    this.browsersDir = browsersDirFor(config.dataDir);
    this.ends = new EndRecorder(o, isDatabaseUnavailable);
    this.creationRate = o.rateLimits.limiter('session_create', config.sessionCreateRatePerMinute);
    this.cdpProxy = createCdpProxy({
      log,
      resolve: async (sessionId, credential) => {
        const s = this.live.get(sessionId);
        if (!s || s.ending) {
          // A reservation is reached with its own token only (it belongs to no project yet).
          const r = s ? undefined : this.reserved.get(sessionId);
          if (!r || !('token' in credential)) return 'not_found';
          if (!sameToken(credential.token, r.cdpToken)) return null;
          return this.cdpTarget(r.sb.browser, () => r.live ?? r);
        }
        if ('token' in credential) {
          if (!sameToken(credential.token, s.cdpToken)) return null;
        } else {
          const owner = await findKey(this.o.db, credential.apiKey);
          if (!owner) return null;
          // Another project's session is not found, as everywhere in the API; it may also
          // have ended while the key was looked up.
          if (owner.projectId !== s.projectId || s.ending) return 'not_found';
        }
        return this.cdpTarget(s.browser, () => s);
      },
    });
    if (config.browserPoolSize > 0) {
      this.pool = new BrowserPool<SessionBrowser>({
        size: config.browserPoolSize,
        browsersDir: this.browsersDir,
        chromiumPath: config.chromiumPath,
        log,
        launch: (rootDir, signal) => launchSessionBrowser(this.o, DEFAULT_LAUNCH_OPTIONS, rootDir, signal, null),
      });
    }
  }

  /** The CDP proxy's view of a browser; its traffic is counted on counted() (read at each message). */
  private cdpTarget(browser: RunningBrowser, counted: () => Counted): CdpTarget {
    return {
      wsEndpoint: browser.wsEndpoint,
      downloadsDir: downloadsDirOf(browser.rootDir),
      uploadsDir: rootPaths(browser.rootDir).uploads,
      onMessage: (from, data) => {
        const s = counted();
        s.lastActivity = Date.now();
        if (from !== 'client') return;
        s.steps++;
        const text = data.toString();
        if (text.includes('"Page.captureScreenshot"')) s.screenshots++;
        if (text.includes('"Browser.close"') && isBrowserClose(text)) s.closeRequested = true;
      },
    };
  }

  /**
   * A warm browser set aside for one session to come (see Reservation), or undefined when
   * the pool has none ready (or the node stops or drains).
   */
  reserveWarm(): WarmReservation | undefined {
    if (this.stopped || this.draining) return undefined;
    const sb = this.pool?.take();
    if (!sb) return undefined;
    const id = randomUUID();
    let gone!: () => void;
    const lost = new Promise<void>((resolve) => (gone = resolve));
    const now = Date.now();
    const cdp = CdpClient.connect(sb.browser.wsEndpoint).catch(() => undefined);
    const r: Reservation = {
      id,
      cdpToken: randomBytes(24).toString('base64url'),
      sb,
      cdp,
      lastActivity: now,
      steps: 0,
      screenshots: 0,
      closeRequested: false,
      gone,
    };
    this.reserved.set(id, r);
    void sb.exited.then(() => this.release(id));
    return { sessionId: id, cdpUrl: this.cdpUrl(id, r.cdpToken), lost, release: () => this.release(id) };
  }

  /** Resolves once the pool is full again (or closed, or absent): reserveWarm has one then. */
  whenWarm(): Promise<void> {
    return this.pool?.whenFull() ?? Promise.resolve();
  }

  /** Whether a session of this body would be served by a reserved browser: nothing asked
   *  for that the pool's browser does not have (launch options, extensions, profile, a
   *  proxy, identities, anything a capability launches cold for). */
  private async servedByReserved(projectId: string, body: SessionCreateBody | undefined): Promise<boolean> {
    return this.reservedFits(body) && !(await this.o.sessionHooks.coldLaunch?.(projectId, normalize(body).session));
  }

  /** What servedByReserved answers without asking the capabilities (no database): a caller's
   *  first look, before it takes a pair; create() asks the whole question. */
  reservedFits(body: SessionCreateBody | undefined): boolean {
    if (!this.pool) return false;
    const { launch, session } = normalize(body);
    if (!fitsWarmPool(launch, session) || launch.adblock !== DEFAULT_LAUNCH_OPTIONS.adblock) return false;
    return !session.proxy && session.identities.ids.length === 0 && !session.captchaSolver;
  }

  /** Ends a reservation that has not become a session (a no-op for one that has). */
  private async release(id: string): Promise<void> {
    const r = this.reserved.get(id);
    if (!r) return;
    this.reserved.delete(id);
    this.cdpProxy.closeSession(id);
    void r.cdp.then((c) => c?.close());
    try {
      await r.sb.close();
    } finally {
      r.gone();
    }
  }

  /** Sweeps what a killed predecessor left, fails its sessions, and starts the timers. */
  async start(): Promise<void> {
    const swept = await sweepOrphans(this.browsersDir, this.o.log);
    if (swept.length) this.o.log.warn({ swept: swept.length }, 'removed browsers left by a previous run');
    await this.failSessionsOf({ id: this.nodeId });
    this.tick = setInterval(() => void this.checkTimeouts(), TICK_MS);
    this.tick.unref();
  }

  /** The sessions a node left unfinished (this one killed, or another claimed dead): failed,
   *  each once (an end is recorded once), with session.failed and its credits settled. Their
   *  browsers are the dead machine's business (its restart sweeps them). */
  async failSessionsOf(node: LeftNode): Promise<number> {
    // Failed together: one transaction and one outbox statement per hundred, not per session.
    const left = await store.unfinishedOnNode(this.o.db, node.id, node.before);
    const ended = await recordEnds(
      this.o,
      left.map((row) => ({ id: row.id, status: 'failed' as const, reason: 'browser_pod_not_found' as const })),
    );
    return ended.filter(Boolean).length;
  }

  get running(): number {
    return this.live.size;
  }

  /** Warm browsers ready in the pool. */
  get warm(): number {
    return this.pool?.available ?? 0;
  }

  /** Browsers that may still start before the concurrent-browser limit; none while draining,
   *  so the batch and task workers claim nothing more here. */
  get capacity(): number {
    if (this.draining) return 0;
    return Math.max(0, this.o.config.maxConcurrentBrowsers - this.live.size - this.starting.size);
  }

  /** Browsers running or starting here (what a heartbeat reports). */
  get busy(): number {
    return this.live.size + this.starting.size;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  /**
   * A graceful stop's first phase: new sessions are refused (503, so a load balancer's retry
   * or the client goes to another node) while the running ones go on, up to graceMs, for
   * their clients to finish them. stop() then ends what is left.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    await Promise.all([...this.reserved.keys()].map((id) => this.release(id)));
    const deadline = Date.now() + graceMs;
    while (this.busy > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(200, Math.max(1, deadline - Date.now()))));
  }

  /** Why create() would refuse this body with 400, or undefined (a batch checks before queueing). */
  async validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> {
    const { session } = normalize(body);
    return (await refusal(session, body, this.o)) ?? (await this.o.sessionHooks.check?.(projectId, session));
  }

  /** Creates a session, as one trace span (a no-op unless tracing is on). */
  create(owner: { projectId: string; apiKeyId: string }, body: SessionCreateBody | undefined, options: CreateOptions = {}): Promise<CreateResult> {
    return tracer().startActiveSpan(
      'session.create',
      { attributes: { 'project.id': owner.projectId, ...(options.batchId ? { 'batch.id': options.batchId } : {}) } },
      async (span) => {
        try {
          let result: CreateResult;
          try {
            result = await this.createUntraced(owner, body, options);
          } finally {
            // Not become the session (refused, failed, or not served by it): ended, never reused.
            if (options.reserved !== undefined) await this.release(options.reserved);
          }
          if (result.ok) span.setAttribute('session.id', result.id);
          else span.setAttributes({ 'session.refused': result.status, 'session.refusal': result.message });
          return result;
        } finally {
          span.end();
        }
      },
    );
  }

  private async createUntraced(
    owner: { projectId: string; apiKeyId: string },
    body: SessionCreateBody | undefined,
    options: CreateOptions,
  ): Promise<CreateResult> {
    const { launch, session } = normalize(body);
    const refused = (await refusal(session, body, this.o)) ?? (await this.o.sessionHooks.check?.(owner.projectId, session));
    if (refused) return { ok: false, status: 400, message: refused };
    if (this.stopped) return { ok: false, status: 500, message: 'The server is shutting down' };
    if (this.draining) return this.refuseDraining(options);
    // The rate limit is counted in PostgreSQL or Redis when several nodes share it: its round
    // trip runs beside the credit check's instead of after it, so it adds nothing to a
    // creation's latency at p50 (bench/rate-limits.ts). A creation refused for credits has
    // spent a hit of its key's rate, which changes nothing for a key that cannot create.
    const [unpaid, rate] = await Promise.all([
      refuseUnpaid(this.o.db, owner.projectId, this.o.config),
      options.internal ? undefined : this.creationRate.take(owner.apiKeyId),
    ]);
    if (unpaid) return { ok: false, status: 402, message: unpaid };
    if (rate && !rate.allowed) {
      return { ok: false, status: 429, message: 'Session creation rate limit exceeded', retryAfterSeconds: rate.retryAfterSeconds };
    }
    const sticky = session.proxy?.type === 'service_proxy' ? await this.o.sessionHooks.stickyProxy?.(owner.projectId, session) : undefined;
    const up = await sessionUpstream(session.proxy, this.o.serviceProxies, sticky);
    if (!up.ok) return up;
    // A reservation serves the session only where a pooled browser would (and the session
    // then has the id and CDP token its client already connected with).
    let reservation = options.reserved !== undefined ? this.reserved.get(options.reserved) : undefined;
    if (reservation && !(await this.servedByReserved(owner.projectId, body))) reservation = undefined;
    // Read before the capacity check: between the check and starting++ nothing may await.
    const cap = await this.projectSessionCap(owner.projectId);
    if (cap !== undefined && (session.maxDurationMs === undefined || session.maxDurationMs > cap)) session.maxDurationMs = cap;
    if (this.stopped) return { ok: false, status: 500, message: 'The server is shutting down' };
    if (this.draining) return this.refuseDraining(options);
    if (this.live.size + this.starting.size >= this.o.config.maxConcurrentBrowsers) {
      return { ok: false, status: 429, message: `Concurrent browser limit reached (${this.o.config.maxConcurrentBrowsers})` };
    }

    if (reservation && !this.reserved.has(reservation.id)) reservation = undefined;
    const id = reservation?.id ?? options.sessionId ?? randomUUID();
    if (this.starting.has(id) || this.live.has(id)) return { ok: false, status: 500, message: 'The session id is in use' };
    const abort = new AbortController();
    this.starting.set(id, abort);
    const cdpToken = reservation?.cdpToken ?? randomBytes(24).toString('base64url');
    const liveViewToken = randomBytes(24).toString('base64url');
    let sb: SessionBrowser | undefined;
    let cdp: CdpClient | undefined;
    try {
      const inserted = await store.insertSessionWithinCap(this.o.db, {
        id,
        projectId: owner.projectId,
        nodeId: this.nodeId,
        configuration: storedConfiguration(body),
        tags: session.tags,
        cdpToken,
        liveViewToken,
        batchId: options.batchId,
        serviceProxyId: up.serviceProxyId,
      });
      if ('cap' in inserted) return { ok: false, status: 429, message: `The project's concurrent browser limit is reached (${inserted.cap})` };
      abort.signal.throwIfAborted();
      let warm: SessionBrowser | undefined;
      if (reservation && this.reserved.get(reservation.id) === reservation) {
        // The session's from here on.
        this.reserved.delete(reservation.id);
        warm = reservation.sb;
        warm.adopt(id);
      } else {
        // No reservation, or its browser died meanwhile: the pool, or a cold launch (onReserved false).
        reservation = undefined;
        const fits = fitsWarmPool(launch, session) && !(await this.o.sessionHooks.coldLaunch?.(owner.projectId, session));
        warm = fits ? this.pool?.take(id) : undefined;
      }
      sb =
        warm ??
        (await spanned('browser.launch', { attributes: { 'session.id': id } }, () => this.launchCold(id, owner.projectId, launch, session, abort.signal)));
      trace.getActiveSpan()?.setAttribute('browser.warm', warm !== undefined);
      if (up.upstream) sb.traffic.setUpstream(up.upstream);
      cdp = (reservation ? await reservation.cdp : undefined) ?? (await CdpClient.connect(sb.browser.wsEndpoint));
      // Warm browsers carry the ad-block (a default); a session without it turns it off here.
      if (warm && !launch.adblock) await turnAdblockOff(cdp);
      // Ended (DELETE) or the server stopping while the browser started: nothing of it may
      // outlive the session.
      abort.signal.throwIfAborted();
      const now = Date.now();
      const live: LiveSession = {
        id,
        projectId: owner.projectId,
        cdpToken,
        liveViewToken,
        options: session,
        browser: sb.browser,
        traffic: sb.traffic,
        cdp,
        createdAt: now,
        askedAt: new Date(inserted.row.created_at).getTime(),
        lastActivity: now,
        // What its client did through the CDP proxy while it was a reservation.
        steps: reservation?.steps ?? 0,
        screenshots: reservation?.screenshots ?? 0,
        serviceProxyId: up.serviceProxyId,
        closeRequested: reservation?.closeRequested ?? false,
      };
      if (reservation) reservation.live = live;
      this.live.set(id, live);
      this.starting.delete(id);
      // A browser that dies, or stops answering its own CDP socket, fails its session; one
      // that a client closed (Browser.close, as Puppeteer's browser.close() sends) ends it
      // cleanly.
      const lost = () =>
        live.closeRequested ? this.endUnattended(id, 'completed', 'browser_closed') : this.endUnattended(id, 'failed', 'browser_unreachable');
      void sb.browser.exited.then(lost);
      void cdp.closed.then(lost);
      if (session.initialUrl) {
        const [page] = await listPages(cdp);
        const targetId = page?.targetId ?? (await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId;
        await spanned('browser.navigate', { attributes: { 'session.id': id } }, () => navigate(cdp!, targetId, session.initialUrl!)).catch((err: Error) =>
          this.o.log.info({ sessionId: id, err: err.message }, 'initial_url did not finish loading'),
        );
      }
      await store.markRunning(this.o.db, id);
      await this.o.sessionHooks.started?.(live);
      return {
        ok: true,
        id,
        cdpUrl: this.cdpUrl(id, cdpToken),
        liveViewUrl: this.liveViewUrl(id, liveViewToken),
        ...(reservation ? { onReserved: true } : {}),
      };
    } catch (err) {
      // The database went away during the start: the caller hears 503 at once (a batch item
      // goes back to its queue), and the session's end, if its row was written, is recorded
      // once the database is back.
      const unavailable = isDatabaseUnavailable(err);
      if (this.live.has(id)) {
        if (!unavailable) this.o.log.error({ sessionId: id, err }, 'session start failed');
        const ending = this.end(id, 'failed', 'launch_failed');
        if (unavailable) {
          ending.catch((e: unknown) => this.o.log.error({ err: e, sessionId: id }, 'could not record the end of a session'));
          throw err;
        }
        await ending;
      } else {
        cdp?.close();
        if (sb) await closeMeteredBrowser(sb);
        if (abort.signal.aborted) {
          // Ended while starting (a DELETE, the server's shutdown): end() recorded it, unless
          // it came before the row existed; recording it again is a no-op otherwise.
          const ended = abort.signal.reason as EndRequest;
          this.o.log.info({ sessionId: id, reason: ended.reason }, 'session ended while its browser was starting');
          await this.recordDurably(id, ended.status, ended.reason, undefined, ended.deleted).catch(() => {});
          if (this.stopped) return { ok: false, status: 500, message: 'The server is shutting down' };
          // Created, then ended by request before it was ready: it exists, and has ended.
          return { ok: true, id, cdpUrl: this.cdpUrl(id, cdpToken), liveViewUrl: this.liveViewUrl(id, liveViewToken) };
        }
        if (!unavailable) this.o.log.error({ sessionId: id, err }, 'session start failed');
        const recording = this.recordDurably(id, 'failed', 'launch_failed', undefined, false).catch(() => undefined);
        if (unavailable) throw err;
        await recording;
      }
      return { ok: false, status: 500, message: 'The browser could not be started' };
    } finally {
      this.starting.delete(id);
    }
  }

  /**
   * Ends a session on this node; resolves with its ended row (undefined if it had ended).
   * answerNow: rejects with DatabaseUnavailableError as soon as recording the end fails for
   * that reason, for a caller that must answer now (a request); the browser is gone all the
   * same, and the end is recorded once the database is back.
   */
  end(
    id: string,
    status: 'completed' | 'failed',
    reason: EndReason,
    options: {
      deleted?: boolean;
      answerNow?: boolean;
      /**
       * The browser is frozen (SIGSTOP) when the end begins and torn down once this settles,
       * not at once: a caller that reports something right after the end is recorded (a
       * task run, its outcome) does so without the teardown's CPU beside it. The returned
       * promise still waits for the teardown.
       */
      teardownAfter?: Promise<unknown>;
    } = {},
  ): Promise<store.SessionRow | undefined> {
    const ending = this.endUnanswered(id, status, reason, options);
    return options.answerNow ? this.answerNow(id, ending) : ending;
  }

  private answerNow(id: string, ending: Promise<store.SessionRow | undefined>): Promise<store.SessionRow | undefined> {
    return new Promise((resolve, reject) => {
      let waiters = this.failWaiters.get(id);
      if (!waiters) this.failWaiters.set(id, (waiters = new Set()));
      waiters.add(reject);
      ending.then(resolve, reject).finally(() => {
        waiters.delete(reject);
        if (waiters.size === 0 && this.failWaiters.get(id) === waiters) this.failWaiters.delete(id);
      });
      const failing = this.recordFailing.get(id);
      if (failing) reject(failing);
    });
  }

  private endUnanswered(
    id: string,
    status: 'completed' | 'failed',
    reason: EndReason,
    options: { deleted?: boolean; teardownAfter?: Promise<unknown> },
  ): Promise<store.SessionRow | undefined> {
    const live = this.live.get(id);
    if (!live) {
      const pending = this.unrecorded.get(id);
      if (pending) return pending;
      // Still launching: abort the launch; create() closes whatever it had started.
      const request: EndRequest = { status, reason, deleted: options.deleted ?? false };
      this.starting.get(id)?.abort(request);
      return this.ends.record({ id, status, reason, deleted: options.deleted ?? false });
    }
    live.ending ??= (async () => {
      this.cdpProxy.closeSession(id);
      await this.o.sessionHooks.ending?.(live);
      live.cdp.close();
      // Frozen before its traffic is read: nothing it does after goes unmetered.
      if (options.teardownAfter) live.browser.freeze();
      const traffic = live.traffic.stats();
      // The end is recorded while the browser is torn down: the figures are final (the
      // traffic was read above, the CDP clients are gone), and a crash in between is
      // swept at the next start.
      // While the database is unavailable the end waits to be recorded, and the browser
      // goes all the same: the session leaves this node's count when its browser is gone.
      const gate = options.teardownAfter?.then(
        () => undefined,
        () => undefined,
      );
      const closing = (gate ? gate.then(() => closeMeteredBrowser(live)) : closeMeteredBrowser(live)).finally(() => this.live.delete(id));
      let row: store.SessionRow | undefined;
      try {
        row = await this.recordDurably(id, status, reason, { ...traffic, steps: live.steps, screenshots: live.screenshots }, options.deleted ?? false);
      } finally {
        await closing;
      }
      if (row) {
        const end = { status: row.status as SessionEnd['status'], reason, endedAt: row.ended_at ?? new Date() };
        const after = Promise.resolve(this.o.sessionHooks.ended?.(live, end));
        this.afterEnd.add(after);
        void after.finally(() => this.afterEnd.delete(after));
      }
      return row;
    })();
    return live.ending;
  }

  /**
   * Records a session's end (record-end.ts), retrying while the database is unavailable
   * until it commits; one record a session however often it is asked.
   */
  private recordDurably(
    id: string,
    status: 'completed' | 'failed',
    reason: EndReason,
    usage: SessionUsage | undefined,
    deleted: boolean,
  ): Promise<store.SessionRow | undefined> {
    const pending = this.unrecorded.get(id);
    if (pending) return pending;
    const o = { log: this.o.log.child({ sessionId: id }), signal: this.giveUp.signal };
    let interrupted = false;
    const recording = untilCommitted(
      `the end of session ${id}`,
      () =>
        this.ends.record({ id, status, reason, usage, deleted }).catch((err: unknown) => {
          if (isDatabaseUnavailable(err)) {
            interrupted = true;
            this.recordFailing.set(id, err);
            for (const tell of this.failWaiters.get(id) ?? []) tell(err);
          }
          throw err;
        }),
      o,
    ).then(async (row) => {
      // A connection lost while COMMIT was answered may have committed the end that failed
      // here: the retry then finds the row ended, by this very end, and ended hooks still run.
      if (row || !interrupted) return row;
      return untilCommitted(`the end of session ${id}`, () => store.endedAs(this.o.db, id, status, reason), o);
    });
    this.unrecorded.set(id, recording);
    void recording
      .finally(() => {
        this.unrecorded.delete(id);
        this.recordFailing.delete(id);
        this.failWaiters.delete(id);
      })
      .catch(() => {});
    return recording;
  }

  /** Ends a session from a timer or a watcher, where nobody awaits the end: failures are logged. */
  private endUnattended(id: string, status: 'completed' | 'failed', reason: EndReason): void {
    this.end(id, status, reason).catch((err: unknown) => this.o.log.error({ err, sessionId: id, reason }, 'could not record the end of a session'));
  }

  /** A session running on this node, for the capabilities that act on it. */
  get(id: string): RunningSession | undefined {
    const s = this.live.get(id);
    return s && !s.ending ? s : undefined;
  }

  /** The project's sessions running on this node, oldest first. */
  runningOf(projectId: string): RunningSession[] {
    return [...this.live.values()].filter((s) => s.projectId === projectId && !s.ending).sort((a, b) => a.createdAt - b.createdAt);
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

  /** A browser of its own for the session, its root filled by the capabilities that add to its launch. */
  private launchCold(id: string, projectId: string, launch: LaunchOptions, options: SessionOptions, signal: AbortSignal): Promise<SessionBrowser> {
    const rootDir = join(this.browsersDir, `s-${randomBytes(6).toString('hex')}`);
    const prepare = (root: string) => this.o.sessionHooks.launching?.({ id, projectId, options, rootDir: root }) ?? Promise.resolve(undefined);
    return launchSessionBrowser(this.o, launch, rootDir, signal, id, prepare);
  }

  /**
   * Activity from input, a live-view viewer, or a server-side client of the browser (the MCP
   * server's, which talks to the browser directly): CDP traffic through the proxy is counted
   * there. A screenshot is a step that is billed as one.
   */
  touch(id: string, kind: 'input' | 'liveview' | 'screenshot'): boolean {
    const s = this.live.get(id);
    if (!s || s.ending) return false;
    s.lastActivity = Date.now();
    if (kind !== 'liveview') s.steps++;
    if (kind === 'screenshot') s.screenshots++;
    return true;
  }

  async pages(id: string): Promise<(PageTarget & { active: boolean })[] | undefined> {
    const s = this.live.get(id);
    if (!s || s.ending) return undefined;
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

  /** The browser's /json/version, with our cdp_url in place of its own endpoint. */
  browserEndpoint(id: string, token: string): { wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized' {
    const s = this.live.get(id);
    if (!s || s.ending) return 'not_found';
    if (!sameToken(token, s.cdpToken)) return 'unauthorized';
    return { wsEndpoint: s.browser.wsEndpoint, cdpUrl: this.cdpUrl(id, s.cdpToken) };
  }

  /** The cdp_url of a session running here, for the server's runners of user code (the
   * sandbox), which reach the browser like any client: through the CDP proxy. */
  cdpUrlOf(id: string): string | undefined {
    const s = this.live.get(id);
    return s && !s.ending ? this.cdpUrl(id, s.cdpToken) : undefined;
  }

  cdpUrl(id: string, token: string): string {
    return `${this.o.config.publicUrl.replace(/^http/, 'ws')}/v1/cdp/${id}?token=${token}`;
  }

  liveViewUrl(id: string, token: string): string {
    return `${this.o.config.publicUrl}/live/${id}?token=${token}`;
  }

  /** This node was claimed dead by another while it still ran (cut off from the database
   *  longer than NODE_DEAD_AFTER_SECONDS): its sessions were failed there, with their events;
   *  close their browsers here (their rows are ended already, so no second event). */
  async abandonAll(): Promise<void> {
    await Promise.all([...this.starting.keys(), ...this.live.keys()].map((id) => this.end(id, 'failed', 'browser_pod_not_found')));
  }

  /** A creation on a draining node: 503 for a client; for the server's own callers (batch
   *  items, task runs) the 429 they already take as "no room here, queue it again". */
  private refuseDraining(options: CreateOptions): CreateResult {
    const message = 'This node is draining (shutting down) and takes no new sessions; retry, another node takes it';
    return { ok: false, status: options.internal ? 429 : 503, message };
  }

  /** Graceful shutdown: refuse new work, end every session, close the pool. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.tick);
    const reservations = Promise.all([...this.reserved.keys()].map((id) => this.release(id)));
    const ends = Promise.allSettled([...this.starting.keys(), ...this.live.keys()].map((id) => this.end(id, 'failed', 'server_shutdown')));
    // Browsers close at once; ends the database cannot take (it is down) are waited for a
    // while, then left to the next start, which fails the sessions this node left running.
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([ends, new Promise((r) => (grace = setTimeout(r, STOP_RECORD_GRACE_MS)))]);
    clearTimeout(grace);
    this.giveUp.abort();
    const left = this.unrecorded.size;
    await ends;
    await Promise.allSettled([...this.unrecorded.values()]);
    if (left > 0) this.o.log.warn({ sessions: left }, 'ends not recorded at shutdown (database unavailable): the next start fails these sessions');
    // The launches aborted above are closed by their create(): wait for that (bounded).
    for (let i = 0; this.starting.size > 0 && i < 300; i++) await new Promise((r) => setTimeout(r, 100));
    await Promise.all(this.afterEnd);
    await reservations;
    await this.pool?.close();
    this.cdpProxy.close();
    // The browsers directory itself, once empty (rmdir refuses otherwise): nothing of this
    // server stays in the temporary directory.
    await rmdir(this.browsersDir).catch(() => {});
  }

  private async projectSessionCap(projectId: string): Promise<number | undefined> {
    const [row] = await this.o.db.query<{ max_session_minutes: number | null }>('SELECT max_session_minutes FROM projects WHERE id = $1', [projectId]);
    return row?.max_session_minutes ? row.max_session_minutes * 60_000 : undefined;
  }

  private async checkTimeouts(): Promise<void> {
    const now = Date.now();
    for (const s of this.live.values()) {
      if (s.ending) continue;
      const { maxDurationMs, idleTimeoutMs } = s.options;
      if (maxDurationMs !== undefined && now - s.createdAt >= maxDurationMs) this.endUnattended(s.id, 'completed', 'max_duration');
      else if (idleTimeoutMs !== undefined && now - s.lastActivity >= idleTimeoutMs) this.endUnattended(s.id, 'completed', 'idle_timeout');
    }
  }
}

/** Whether a CDP message from a client is the command Browser.close (not just mentions it). */
function isBrowserClose(text: string): boolean {
  try {
    return (JSON.parse(text) as { method?: unknown }).method === 'Browser.close';
  } catch {
    return false;
  }
}
