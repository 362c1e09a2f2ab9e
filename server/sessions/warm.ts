// Warm browsers: the pool of browsers launched ahead with the default options, and the
// reservations taken from it for sessions to come (live.ts says what a reservation is).
// A creation takes a pooled browser when its body asks for nothing the pool's browsers do
// not have; a reservation becomes its session only then, and is ended otherwise, never
// handed to anything else.
import { randomBytes, randomUUID } from 'node:crypto';
import { CdpClient } from '../browser/cdp-client.js';
import { availableParallelism } from 'node:os';
import { BrowserPool, DEFAULT_LAUNCH_OPTIONS, groupPssBytes, prioritiesWork } from '../browser/index.js';
import type { CdpAccess } from './cdp-access.js';
import type { Reservation, StepDeps } from './live.js';
import { fitsWarmPool, normalize, type SessionCreateBody } from './options.js';
import { launchSessionBrowser, type SessionBrowser } from './session-browser.js';

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

export class WarmBrowsers {
  private readonly pool: BrowserPool<SessionBrowser> | undefined;
  /** Warm browsers set aside for sessions to come (reserve), by the session's id. */
  private readonly reserved = new Map<string, Reservation>();

  constructor(private readonly o: Omit<StepDeps, 'db'> & { browsersDir: string; cdp: Pick<CdpAccess, 'proxy' | 'cdpUrl'> }) {
    if (o.config.browserPoolSize > 0) {
      // Refills at a background CPU weight, where this server may set one and give it back:
      // then they start at once and take only what the sessions leave (cpu-priority.ts).
      const background = prioritiesWork();
      const budget = o.config.browserPoolMemoryMb * 2 ** 20;
      this.pool = new BrowserPool<SessionBrowser>({
        size: o.config.browserPoolSize,
        max: budget > 0 ? o.config.maxConcurrentBrowsers : o.config.browserPoolSize,
        memoryBudgetBytes: budget,
        memoryOf: (sb) => groupPssBytes(sb.browser.pid),
        idleMs: o.config.browserPoolIdleSeconds * 1000,
        // Two at once on a machine of two cores or more: one launch alone leaves a core idle
        // for much of its time (it waits on Xvfb, the first paint, the window's fitting).
        parallel: Math.min(2, availableParallelism()),
        ...(background ? { refillDelayMs: 0, onTake: (sb: SessionBrowser) => sb.browser.foreground() } : {}),
        browsersDir: o.browsersDir,
        chromiumPath: o.config.chromiumPath,
        log: o.log,
        launch: (rootDir, signal) => launchSessionBrowser(o, DEFAULT_LAUNCH_OPTIONS, rootDir, signal, null, undefined, { background }),
      });
    }
  }

  /** Warm browsers ready in the pool. */
  get available(): number {
    return this.pool?.available ?? 0;
  }

  /** The reservation made under this session id, while it is one. */
  get(id: string): Reservation | undefined {
    return this.reserved.get(id);
  }

  /**
   * A warm browser set aside for one session to come (see Reservation), or undefined when
   * the pool has none ready (or the node stops or drains).
   */
  reserve(): WarmReservation | undefined {
    if (this.o.table.stopped || this.o.table.draining) return undefined;
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
    return { sessionId: id, cdpUrl: this.o.cdp.cdpUrl(id, r.cdpToken), lost, release: () => this.release(id) };
  }

  /** Resolves once the pool is full again (or closed, or absent): reserve has one then. */
  whenWarm(): Promise<void> {
    return this.pool?.whenFull() ?? Promise.resolve();
  }

  /** Whether a session of this body would be served by a reserved browser: nothing asked
   *  for that the pool's browser does not have (launch options, extensions, profile, a
   *  proxy, identities, anything a capability launches cold for). */
  async servedByReserved(projectId: string, body: SessionCreateBody | undefined): Promise<boolean> {
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

  /**
   * The reservation's browser, now the session's (its id): undefined when the reservation
   * is gone meanwhile (its browser died, it was released).
   */
  claim(r: Reservation, sessionId: string): SessionBrowser | undefined {
    if (this.reserved.get(r.id) !== r) return undefined;
    this.reserved.delete(r.id);
    r.sb.adopt(sessionId);
    return r.sb;
  }

  /** A pooled browser for the session, adopted under its id: one ready, or one about to be
   *  (BrowserPool.takeSoon); undefined for a cold launch. */
  async take(sessionId: string, signal?: AbortSignal): Promise<SessionBrowser | undefined> {
    return this.pool?.takeSoon(sessionId, signal);
  }

  /** Ends a reservation that has not become a session (a no-op for one that has). */
  async release(id: string): Promise<void> {
    const r = this.reserved.get(id);
    if (!r) return;
    this.reserved.delete(id);
    this.o.cdp.proxy.closeSession(id);
    void r.cdp.then((c) => c?.close());
    try {
      await r.sb.close();
    } finally {
      r.gone();
    }
  }

  /** Ends every reservation (the node drains or stops). */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.reserved.keys()].map((id) => this.release(id)));
  }

  /** Closes the pool's browsers (after releaseAll). */
  async close(): Promise<void> {
    await this.pool?.close();
  }
}
