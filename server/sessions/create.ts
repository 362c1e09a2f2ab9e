// A session's creation, as the steps it takes: admit (what the body may ask for, the node
// taking sessions, credits, the key's creation rate, a proxy, the project's duration and browser caps),
// claim (a slot under the browser limit and an id, then the row within the project's cap),
// acquire a browser (the reserved one, a pooled one, or a cold launch), go live (watched,
// its first page loaded, marked running, the capabilities told) and, on any failure or an
// end asked for meanwhile, unwind (nothing of it outlives the attempt). One trace span.
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import { CdpClient, listPages, navigate } from '../browser/cdp-client.js';
import { closeMeteredBrowser, turnAdblockOff, type BrowserLimits } from '../browser/index.js';
import type { SessionOptions } from '../capability/index.js';
import { refuseUnpaid } from '../credits/account.js';
import type { RateLimiter } from '../http/rate-limit/index.js';
import type { ServiceProxyPool } from '../net/service-proxies.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';
import { spanned } from '../tracing.js';
import type { CdpAccess } from './cdp-access.js';
import type { SessionEnds } from './end.js';
import type { EndRequest, LiveSession, Reservation, StepDeps } from './live.js';
import { fitsWarmPool, normalize, storedConfiguration, type LaunchOptions, type SessionCreateBody } from './options.js';
import { refusal } from './refusal.js';
import { launchSessionBrowser, type SessionBrowser } from './session-browser.js';
import * as store from './store.js';
import { sessionUpstream, type SessionUpstream } from './upstream.js';
import type { WarmBrowsers } from './warm.js';

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

type Owner = { projectId: string; apiKeyId: string };
type Refused = Extract<CreateResult, { ok: false }>;

/** What admit found the session may have. */
interface Admitted {
  launch: LaunchOptions;
  session: SessionOptions;
  up: Extract<SessionUpstream, { ok: true }>;
  /** The reservation to serve it, if it fits one. */
  reservation: Reservation | undefined;
  /** Its project's caps on its browser, where they are not the server's (browser/cgroup.ts). */
  limits: BrowserLimits | undefined;
}

/** The slot a creation claimed, and what it has acquired so far (unwind closes it). */
interface Claim {
  id: string;
  abort: AbortController;
  cdpToken: string;
  liveViewToken: string;
  /** The reservation the session is on; undefined once it is not (gone, or never claimed). */
  reservation: Reservation | undefined;
  sb?: SessionBrowser;
  cdp?: CdpClient;
  /** The browser came from the pool or a reservation (it carries the default ad-block). */
  warm?: boolean;
}

export class SessionCreation {
  constructor(
    private readonly o: StepDeps & {
      serviceProxies: ServiceProxyPool;
      /** The per-key creation rate. */
      creationRate: RateLimiter;
      nodeId: string;
      browsersDir: string;
      warm: WarmBrowsers;
      cdp: Pick<CdpAccess, 'cdpUrl' | 'liveViewUrl'>;
      ends: Pick<SessionEnds, 'end' | 'endUnattended' | 'recordDurably'>;
    },
  ) {}

  /** Why create() would refuse this body with 400, or undefined (a batch checks before queueing). */
  async validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> {
    const { session } = normalize(body);
    return (await refusal(session, body, this.o)) ?? (await this.o.sessionHooks.check?.(projectId, session));
  }

  /** Creates a session, as one trace span (a no-op unless tracing is on). */
  create(owner: Owner, body: SessionCreateBody | undefined, options: CreateOptions = {}): Promise<CreateResult> {
    const attributes = { 'project.id': owner.projectId, ...(options.batchId ? { 'batch.id': options.batchId } : {}) };
    return spanned('session.create', { attributes }, async (span) => {
      let result: CreateResult;
      try {
        result = await this.steps(owner, body, options);
      } finally {
        // Not become the session (refused, failed, or not served by it): ended, never reused.
        if (options.reserved !== undefined) await this.o.warm.release(options.reserved);
      }
      if (result.ok) span.setAttribute('session.id', result.id);
      else span.setAttributes({ 'session.refused': result.status, 'session.refusal': result.message });
      return result;
    });
  }

  private async steps(owner: Owner, body: SessionCreateBody | undefined, options: CreateOptions): Promise<CreateResult> {
    const admitted = await this.admit(owner, body, options);
    if ('ok' in admitted) return admitted;
    // Right after admit's last await: the browser limit is checked and the slot taken at once.
    const claim = this.claim(admitted, options);
    if ('ok' in claim) return claim;
    try {
      const inserted = await store.insertSessionWithinCap(this.o.db, {
        id: claim.id,
        projectId: owner.projectId,
        nodeId: this.o.nodeId,
        configuration: storedConfiguration(body),
        tags: admitted.session.tags,
        cdpToken: claim.cdpToken,
        liveViewToken: claim.liveViewToken,
        batchId: options.batchId,
        serviceProxyId: admitted.up.serviceProxyId,
      });
      if ('cap' in inserted) return { ok: false, status: 429, message: `The project's concurrent browser limit is reached (${inserted.cap})` };
      claim.abort.signal.throwIfAborted();
      await this.acquire(owner, admitted, claim);
      // Ended (DELETE) or the server stopping while the browser started: nothing of it may
      // outlive the session.
      claim.abort.signal.throwIfAborted();
      return await this.goLive(owner, admitted, claim, inserted.row);
    } catch (err) {
      return await this.unwind(claim, err);
    } finally {
      this.o.table.starting.delete(claim.id);
    }
  }

  /** Every check before a slot is taken: a refusal, or what the session may have. */
  private async admit(owner: Owner, body: SessionCreateBody | undefined, options: CreateOptions): Promise<Refused | Admitted> {
    const { launch, session } = normalize(body);
    const refused = (await refusal(session, body, this.o)) ?? (await this.o.sessionHooks.check?.(owner.projectId, session));
    if (refused) return { ok: false, status: 400, message: refused };
    const closed = this.closed(options);
    if (closed) return closed;
    // The rate limit is counted in PostgreSQL or Redis when several nodes share it: its round
    // trip runs beside the credit check's instead of after it, so it adds nothing to a
    // creation's latency at p50 (bench/rate-limits.ts). A creation refused for credits has
    // spent a hit of its key's rate, which changes nothing for a key that cannot create.
    const [unpaid, rate] = await Promise.all([
      refuseUnpaid(this.o.db, owner.projectId, this.o.config),
      options.internal ? undefined : this.o.creationRate.take(owner.apiKeyId),
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
    let reservation = options.reserved !== undefined ? this.o.warm.get(options.reserved) : undefined;
    if (reservation && !(await this.o.warm.servedByReserved(owner.projectId, body))) reservation = undefined;
    // Read before the capacity check (claim): between the check and the slot nothing may await.
    const caps = await store.projectSessionCaps(this.o.db, owner.projectId);
    const cap = caps.maxSessionMs;
    if (cap !== undefined && (session.maxDurationMs === undefined || session.maxDurationMs > cap)) session.maxDurationMs = cap;
    const server = this.o.config.browserCaps?.limits;
    const limits =
      server && (caps.memoryMb !== null || caps.cpus !== null) ? { memoryMb: caps.memoryMb ?? server.memoryMb, cpus: caps.cpus ?? server.cpus } : undefined;
    return { launch, session, up, reservation, limits };
  }

  /** A slot under this node's browser limit, and the session's id and tokens; synchronous,
   *  so that no other creation passes the limit between the check and the slot. */
  private claim(admitted: Admitted, options: CreateOptions): Refused | Claim {
    const { table, config } = this.o;
    const closed = this.closed(options);
    if (closed) return closed;
    if (table.busy >= config.maxConcurrentBrowsers) {
      return { ok: false, status: 429, message: `Concurrent browser limit reached (${config.maxConcurrentBrowsers})` };
    }
    let { reservation } = admitted;
    if (reservation && !this.o.warm.get(reservation.id)) reservation = undefined;
    const id = reservation?.id ?? options.sessionId ?? randomUUID();
    if (table.starting.has(id) || table.live.has(id)) return { ok: false, status: 500, message: 'The session id is in use' };
    const abort = new AbortController();
    table.starting.set(id, abort);
    const cdpToken = reservation?.cdpToken ?? randomBytes(24).toString('base64url');
    return { id, abort, cdpToken, liveViewToken: randomBytes(24).toString('base64url'), reservation };
  }

  /** The session's browser and the server's CDP connection to it, on the claim. */
  private async acquire(owner: Owner, { launch, session, up, limits }: Admitted, claim: Claim): Promise<void> {
    const { id } = claim;
    // The reservation's browser is the session's from here on.
    let warm = claim.reservation ? this.o.warm.claim(claim.reservation, id) : undefined;
    if (!warm) {
      // No reservation, or its browser died meanwhile: the pool, or a cold launch (onReserved false).
      claim.reservation = undefined;
      const fits = fitsWarmPool(launch, session) && !(await this.o.sessionHooks.coldLaunch?.(owner.projectId, session));
      warm = fits ? await this.o.warm.take(id, claim.abort.signal) : undefined;
    }
    if (warm && limits) warm = await this.capped(warm, limits, claim);
    const sb = (claim.sb =
      warm ??
      (await spanned('browser.launch', { attributes: { 'session.id': id } }, () =>
        this.launchCold(id, owner.projectId, launch, session, claim.abort.signal, limits),
      )));
    claim.warm = warm !== undefined;
    trace.getActiveSpan()?.setAttribute('browser.warm', claim.warm);
    if (up.upstream) sb.traffic.setUpstream(up.upstream);
    const cdp = (claim.cdp = (claim.reservation ? await claim.reservation.cdp : undefined) ?? (await CdpClient.connect(sb.browser.wsEndpoint)));
    // Warm browsers carry the ad-block (a default); a session without it turns it off here.
    if (claim.warm && !launch.adblock) await turnAdblockOff(cdp);
  }

  /** A browser of its own for the session, its root filled by the capabilities that add to its launch. */
  private launchCold(
    id: string,
    projectId: string,
    launch: LaunchOptions,
    options: SessionOptions,
    signal: AbortSignal,
    limits: BrowserLimits | undefined,
  ): Promise<SessionBrowser> {
    const rootDir = join(this.o.browsersDir, `s-${randomBytes(6).toString('hex')}`);
    const prepare = (root: string) => this.o.sessionHooks.launching?.({ id, projectId, options, rootDir: root }) ?? Promise.resolve(undefined);
    return launchSessionBrowser(this.o, launch, rootDir, signal, id, prepare, { limits });
  }

  /** A warm browser given its project's caps; undefined (it is closed, and the session launches cold) where the kernel refuses them. */
  private async capped(warm: SessionBrowser, limits: BrowserLimits, claim: Claim): Promise<SessionBrowser | undefined> {
    try {
      warm.browser.group?.setLimits(limits);
      return warm;
    } catch (err) {
      this.o.log.warn({ sessionId: claim.id, limits, err: (err as Error).message }, "a warm browser could not take its project's caps; launching cold");
      claim.reservation = undefined;
      await closeMeteredBrowser(warm);
      return undefined;
    }
  }

  /** The session in the table, watched, on its first page, marked running, the capabilities told. */
  private async goLive(owner: Owner, { session, up }: Admitted, claim: Claim, row: store.SessionRow): Promise<CreateResult> {
    const { id, cdpToken, liveViewToken, reservation } = claim;
    const sb = claim.sb!;
    const cdp = claim.cdp!;
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
      askedAt: new Date(row.created_at).getTime(),
      lastActivity: now,
      // What its client did through the CDP proxy while it was a reservation.
      steps: reservation?.steps ?? 0,
      screenshots: reservation?.screenshots ?? 0,
      serviceProxyId: up.serviceProxyId,
      closeRequested: reservation?.closeRequested ?? false,
    };
    if (reservation) reservation.live = live;
    this.o.table.live.set(id, live);
    this.o.table.starting.delete(id);
    // A browser that dies, or stops answering its own CDP socket, fails its session; one
    // that a client closed (Browser.close, as Puppeteer's browser.close() sends) ends it
    // cleanly.
    // One over its memory cap ends with its own reason (browser/cgroup.ts), also when the
    // kernel killed the browser's main process.
    const lost = () =>
      sb.browser.group?.oomKills()
        ? this.o.ends.endUnattended(id, 'failed', 'memory_limit')
        : live.closeRequested
          ? this.o.ends.endUnattended(id, 'completed', 'browser_closed')
          : this.o.ends.endUnattended(id, 'failed', 'browser_unreachable');
    void sb.browser.exited.then(lost);
    void cdp.closed.then(lost);
    sb.browser.group?.onMemoryLimit(() => this.o.ends.endUnattended(id, 'failed', 'memory_limit'));
    if (session.initialUrl) {
      const [page] = await listPages(cdp);
      const targetId = page?.targetId ?? (await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId;
      await spanned('browser.navigate', { attributes: { 'session.id': id } }, () => navigate(cdp, targetId, session.initialUrl!)).catch((err: Error) =>
        this.o.log.info({ sessionId: id, err: err.message }, 'initial_url did not finish loading'),
      );
    }
    await store.markRunning(this.o.db, id);
    await this.o.sessionHooks.started?.(live);
    return {
      ok: true,
      id,
      cdpUrl: this.o.cdp.cdpUrl(id, cdpToken),
      liveViewUrl: this.o.cdp.liveViewUrl(id, liveViewToken),
      ...(reservation ? { onReserved: true } : {}),
    };
  }

  /** A creation that failed, or was ended while starting: nothing of it outlives the attempt. */
  private async unwind(claim: Claim, err: unknown): Promise<CreateResult> {
    const { id, abort, cdpToken, liveViewToken, sb, cdp } = claim;
    const { log, table, ends } = this.o;
    // The database went away during the start: the caller hears 503 at once (a batch item
    // goes back to its queue), and the session's end, if its row was written, is recorded
    // once the database is back.
    const unavailable = isDatabaseUnavailable(err);
    if (table.live.has(id)) {
      if (!unavailable) log.error({ sessionId: id, err }, 'session start failed');
      const ending = ends.end(id, 'failed', 'launch_failed');
      if (unavailable) {
        ending.catch((e: unknown) => log.error({ err: e, sessionId: id }, 'could not record the end of a session'));
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
        log.info({ sessionId: id, reason: ended.reason }, 'session ended while its browser was starting');
        await ends.recordDurably(id, ended.status, ended.reason, undefined, ended.deleted).catch(() => {});
        if (table.stopped) return { ok: false, status: 500, message: 'The server is shutting down' };
        // Created, then ended by request before it was ready: it exists, and has ended.
        return { ok: true, id, cdpUrl: this.o.cdp.cdpUrl(id, cdpToken), liveViewUrl: this.o.cdp.liveViewUrl(id, liveViewToken) };
      }
      if (!unavailable) log.error({ sessionId: id, err }, 'session start failed');
      const recording = ends.recordDurably(id, 'failed', 'launch_failed', undefined, false).catch(() => undefined);
      if (unavailable) throw err;
      await recording;
    }
    return { ok: false, status: 500, message: 'The browser could not be started' };
  }

  /** The refusal of a node that stops or drains, if it does. A draining node answers 503 for
   *  a client; for the server's own callers (batch items, task runs) the 429 they already
   *  take as "no room here, queue it again". */
  private closed(options: CreateOptions): Refused | undefined {
    if (this.o.table.stopped) return { ok: false, status: 500, message: 'The server is shutting down' };
    if (!this.o.table.draining) return undefined;
    const message = 'This node is draining (shutting down) and takes no new sessions; retry, another node takes it';
    return { ok: false, status: options.internal ? 429 : 503, message };
  }
}
