// One screencast per session, fanned out to whoever needs frames: the recorder and the
// live-view viewers. Page.startScreencast runs on the page in front (see pages.ts) through
// the session's own CDP connection, only while at least one subscriber is there, and
// follows the front page when tabs open, close or are switched.
import type { Logger } from 'pino';
import type { RunningSession, SessionHooks } from '../capability/index.js';
import { listPages } from '../browser/cdp-client.js';
import { PageSessions, activePage } from '../browser/pages.js';

export interface FrameMeta {
  /** The page's size in CSS pixels (input coordinates are in this space). */
  width: number;
  height: number;
  /** When Chromium produced the frame, ms since the epoch. */
  timestamp: number;
  /** The page target the frame shows. */
  targetId: string;
}

export interface Frame {
  /** Increases by one a frame, per session. */
  seq: number;
  /** A JPEG. */
  data: Buffer;
  meta: FrameMeta;
  /** Date.now() when the frame reached the server. */
  receivedAt: number;
}

export interface Tab {
  id: string;
  url: string;
  title: string;
  active: boolean;
}

export type FrameListener = (frame: Frame) => void;

export interface ScreencastOptions {
  /** JPEG quality, 1-100. */
  quality: number;
  log: Pick<Logger, 'warn' | 'debug'>;
}

/** How often the front page is checked besides the events that say it changed. */
const FOLLOW_INTERVAL_MS = 3_000;

export class ScreencastHub {
  /** The newest frame, kept for subscribers that join while the page is still. */
  latest: Frame | undefined;
  private readonly listeners = new Set<FrameListener>();
  private readonly tabListeners = new Set<(tabs: Tab[]) => void>();
  private readonly pages: PageSessions;
  private target: string | undefined;
  private sessionId: string | undefined;
  private running = false;
  private closed = false;
  private seq = 0;
  /** Start, stop and switches run one after the other. */
  private queue: Promise<void> = Promise.resolve();
  private offCdp: (() => void) | undefined;
  private followTimer: NodeJS.Timeout | undefined;
  private tabsTimer: NodeJS.Timeout | undefined;
  private discovering = false;

  constructor(
    readonly session: RunningSession,
    private readonly o: ScreencastOptions,
  ) {
    this.pages = new PageSessions(session.cdp);
  }

  /** Subscribers, frames flow while there is at least one. */
  get subscribers(): number {
    return this.listeners.size;
  }

  /** Whether the screencast is running now. */
  get active(): boolean {
    return this.running && this.sessionId !== undefined;
  }

  /** The page target the screencast shows. */
  get targetId(): string | undefined {
    return this.target;
  }

  /**
   * Receives every frame from now on; with `replay`, the newest frame at once (a still page
   * sends no new frame). Answers the unsubscribe function.
   */
  subscribe(fn: FrameListener, options: { replay?: boolean } = {}): () => void {
    if (this.closed) return () => {};
    this.listeners.add(fn);
    if (options.replay && this.latest) fn(this.latest);
    this.reconcile();
    return () => {
      if (this.listeners.delete(fn)) this.reconcile();
    };
  }

  /** Called with the tab list whenever a tab opens, closes, navigates or comes to the front. */
  onTabs(fn: (tabs: Tab[]) => void): () => void {
    this.tabListeners.add(fn);
    return () => this.tabListeners.delete(fn);
  }

  async tabs(): Promise<Tab[]> {
    const pages = await listPages(this.session.cdp);
    return pages.map((p) => ({ id: p.targetId, url: p.url, title: p.title, active: p.targetId === this.target }));
  }

  /** Brings a tab to the front (a viewer switched tabs); the screencast follows it. */
  activate(targetId: string): Promise<void> {
    return this.enqueue(async () => {
      const pages = await listPages(this.session.cdp);
      if (!pages.some((p) => p.targetId === targetId)) return;
      await this.session.cdp.send('Target.activateTarget', { targetId });
      if (this.running) await this.show(targetId);
    });
  }

  /** Sends a command to the page on screen (live-view input); throws when there is none. */
  dispatch(method: string, params: object): Promise<unknown> {
    const sessionId = this.sessionId;
    if (!sessionId) return Promise.reject(new Error('no page on screen'));
    return this.session.cdp.send(method, params, sessionId);
  }

  /**
   * The front page as one frame, taken now (Page.captureScreenshot), for a recording that got
   * none from the screencast: Chromium sends a frame when the page paints, so a page that
   * painted before the recording began and not since sends none. Undefined when there is no
   * page to show or the browser does not answer within timeoutMs (it may have crashed).
   */
  async still(timeoutMs: number): Promise<Frame | undefined> {
    if (this.closed) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), timeoutMs)));
    const take = async (): Promise<Frame | undefined> => {
      const page = await activePage(this.session.cdp, this.pages, this.target);
      if (!page) return undefined;
      const { content } = this.session.browser.geometry;
      const shot = await this.pages.send<{ data: string }>(page.targetId, 'Page.captureScreenshot', { format: 'jpeg', quality: this.o.quality }, timeoutMs);
      const now = Date.now();
      return {
        seq: ++this.seq,
        data: Buffer.from(shot.data, 'base64'),
        meta: { width: content.width, height: content.height, timestamp: now, targetId: page.targetId },
        receivedAt: now,
      };
    };
    try {
      return await Promise.race([take().catch(() => undefined), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stops for good (the session is ending). */
  close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.tabListeners.clear();
    clearTimeout(this.tabsTimer);
    return this.enqueue(async () => {
      await this.stop();
      await this.pages.close();
    });
  }

  private enqueue(fn: () => Promise<void>): Promise<void> {
    const next = this.queue.then(fn).catch((err: Error) => {
      if (!this.closed) this.o.log.warn({ sessionId: this.session.id, err: err.message }, 'screencast step failed');
    });
    this.queue = next;
    return next;
  }

  /** Starts or stops to match demand, once the steps queued before have run. */
  private reconcile(): void {
    void this.enqueue(async () => {
      const want = !this.closed && this.listeners.size > 0;
      if (want && !this.running) await this.start();
      else if (!want && this.running) await this.stop();
    });
  }

  private async start(): Promise<void> {
    const cdp = this.session.cdp;
    this.running = true;
    this.offCdp = cdp.on((method, params, sessionId) => this.onEvent(method, params, sessionId));
    if (!this.discovering) {
      // Target events (tabs opening, closing, navigating) on the server's connection.
      await cdp.send('Target.setDiscoverTargets', { discover: true });
      this.discovering = true;
    }
    await this.follow();
    this.followTimer = setInterval(() => void this.enqueue(() => this.follow()), FOLLOW_INTERVAL_MS);
    this.followTimer.unref();
  }

  private async stop(): Promise<void> {
    clearInterval(this.followTimer);
    this.followTimer = undefined;
    await this.hide();
    this.offCdp?.();
    this.offCdp = undefined;
    this.running = false;
  }

  /** Moves the screencast to the page in front, if it is not there already. */
  private async follow(): Promise<void> {
    if (!this.running) return;
    const page = await activePage(this.session.cdp, this.pages, this.target);
    if (!page) {
      await this.hide();
      return;
    }
    if (page.targetId !== this.target || !this.sessionId) await this.show(page.targetId);
  }

  private async show(targetId: string): Promise<void> {
    if (this.target === targetId && this.sessionId) return;
    await this.hide();
    const { content } = this.session.browser.geometry;
    const sessionId = await this.pages.session(targetId);
    // Set before asking: the first frame may come before the answer.
    this.target = targetId;
    this.sessionId = sessionId;
    try {
      await this.session.cdp.send(
        'Page.startScreencast',
        { format: 'jpeg', quality: this.o.quality, maxWidth: content.width, maxHeight: content.height, everyNthFrame: 1 },
        sessionId,
      );
    } catch (err) {
      if (this.sessionId === sessionId) this.sessionId = undefined;
      this.pages.forget(targetId);
      throw err;
    }
    this.tabsChanged();
  }

  private async hide(): Promise<void> {
    const sessionId = this.sessionId;
    this.sessionId = undefined;
    if (sessionId) await this.session.cdp.send('Page.stopScreencast', {}, sessionId).catch(() => {});
  }

  private onEvent(method: string, params: any, sessionId: string | undefined): void {
    switch (method) {
      case 'Page.screencastFrame':
        if (sessionId !== this.sessionId || !sessionId) return;
        // Acknowledge at once: Chromium holds back frames while acknowledgements are due.
        this.session.cdp.send('Page.screencastFrameAck', { sessionId: params.sessionId }, sessionId).catch(() => {});
        this.emit(params, this.target!);
        return;
      case 'Page.screencastVisibilityChanged':
        // The page went to the background: another tab came to the front.
        if (sessionId === this.sessionId && !params.visible) void this.enqueue(() => this.follow());
        return;
      case 'Target.targetCreated':
        if (params.targetInfo?.type !== 'page') return;
        // A new tab comes to the front once it has a document to show.
        setTimeout(() => void this.enqueue(() => this.follow()), 150).unref();
        this.tabsChanged();
        return;
      case 'Target.targetDestroyed':
        if (params.targetId === this.target) {
          this.sessionId = undefined;
          this.target = undefined;
          void this.enqueue(() => this.follow());
        }
        this.tabsChanged();
        return;
      case 'Target.detachedFromTarget':
        if (params.sessionId === this.sessionId) {
          this.sessionId = undefined;
          void this.enqueue(() => this.follow());
        }
        return;
      case 'Target.targetInfoChanged':
        if (params.targetInfo?.type === 'page') this.tabsChanged();
        return;
    }
  }

  private emit(params: { data: string; metadata: { deviceWidth: number; deviceHeight: number; timestamp?: number } }, targetId: string): void {
    const now = Date.now();
    const frame: Frame = {
      seq: ++this.seq,
      data: Buffer.from(params.data, 'base64'),
      meta: {
        width: Math.round(params.metadata.deviceWidth),
        height: Math.round(params.metadata.deviceHeight),
        timestamp: params.metadata.timestamp ? params.metadata.timestamp * 1000 : now,
        targetId,
      },
      receivedAt: now,
    };
    this.latest = frame;
    for (const l of this.listeners) {
      try {
        l(frame);
      } catch (err) {
        this.o.log.warn({ sessionId: this.session.id, err: (err as Error).message }, 'frame subscriber failed');
      }
    }
  }

  /** Tells the tab listeners, at most once per 100 ms. */
  private tabsChanged(): void {
    if (this.tabListeners.size === 0 || this.tabsTimer) return;
    this.tabsTimer = setTimeout(() => {
      this.tabsTimer = undefined;
      if (this.closed || this.tabListeners.size === 0) return;
      this.tabs().then(
        (tabs) => {
          for (const l of this.tabListeners) l(tabs);
        },
        () => {},
      );
    }, 100);
    this.tabsTimer.unref();
  }
}

/** The screencast hubs of the sessions on this node; closes a session's hub as it ends. */
export class Screencasts implements SessionHooks {
  private readonly hubs = new Map<string, ScreencastHub>();
  private readonly over = new WeakSet<RunningSession>();

  constructor(private readonly o: ScreencastOptions) {}

  /** The session's hub, made on first use; a closed one once the session is ending. */
  hub(s: RunningSession): ScreencastHub {
    let h = this.hubs.get(s.id);
    if (!h) {
      h = new ScreencastHub(s, this.o);
      if (this.over.has(s)) void h.close();
      else this.hubs.set(s.id, h);
    }
    return h;
  }

  async ending(s: RunningSession): Promise<void> {
    this.over.add(s);
    const h = this.hubs.get(s.id);
    this.hubs.delete(s.id);
    await h?.close();
  }
}
