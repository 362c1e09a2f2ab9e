// A page of a session's browser as challenges.ts needs it (a ChallengePage), over the
// server's own CDP connection: attached without pausing the page and with the Page domain
// only, for its navigation and load events. Nothing else is turned on or changed (no
// emulation, no interception, no download behaviour, no scripts added to new documents):
// the user's own CDP client, which drives the same page, must not notice a second client.
import type { CdpClient } from '../browser/cdp-client.js';
import type { ChallengePage } from '../page/challenges.js';

/** Longest a look at the page may take: a page busy in a long script must not hold a pass up. */
const EVALUATE_TIMEOUT_MS = 30_000;

/**
 * How long after DOMContentLoaded a document whose load event has not come is looked at
 * anyway: a challenge page with a request that never ends (a hanging tracker, an image of a
 * server that does not answer) never fires load. Most pages load well within it, so they still
 * cost one look, not two.
 */
export const LOAD_GRACE_MS = 3_000;

export class CdpPage implements ChallengePage {
  private closed = false;
  private mainFrameId = '';
  private currentUrl = '';
  /** The main document's DOMContentLoaded has fired. */
  private domReady = false;
  private readonly navigationWaiters = new Set<() => void>();
  private readonly readyWaiters = new Set<() => void>();
  /** Called when the main document's load event fires, or LOAD_GRACE_MS after its DOMContentLoaded without one. */
  onLoad?: () => void;
  private stalled?: NodeJS.Timeout;

  constructor(
    private readonly cdp: CdpClient,
    /** The flat CDP session attached to the page target. */
    readonly sessionId: string,
  ) {}

  /** Turns the Page domain on and reads where the page is; answers whether its document has loaded. */
  async init(): Promise<boolean> {
    await this.cdp.send('Page.enable', {}, this.sessionId);
    const { frameTree } = await this.cdp.send<{ frameTree: { frame: { id: string; url: string; urlFragment?: string } } }>(
      'Page.getFrameTree',
      {},
      this.sessionId,
    );
    this.mainFrameId = frameTree.frame.id;
    this.currentUrl = frameTree.frame.url + (frameTree.frame.urlFragment ?? '');
    // A page another client has just opened may still wait for that client to resume it.
    const state = await this.run('document.readyState', 5_000).catch(() => 'loading');
    this.domReady = state !== 'loading';
    return state === 'complete';
  }

  /** An event of this page's CDP session. */
  handle(method: string, params: any): void {
    switch (method) {
      case 'Page.frameNavigated':
        if (params.frame.parentId) return;
        this.mainFrameId = params.frame.id;
        this.currentUrl = params.frame.url + (params.frame.urlFragment ?? '');
        this.domReady = false;
        clearTimeout(this.stalled);
        wake(this.navigationWaiters);
        return;
      case 'Page.navigatedWithinDocument':
        if (params.frameId === this.mainFrameId) this.currentUrl = params.url;
        return;
      case 'Page.domContentEventFired':
        this.domReady = true;
        wake(this.readyWaiters);
        clearTimeout(this.stalled);
        this.stalled = setTimeout(() => this.onLoad?.(), LOAD_GRACE_MS);
        return;
      case 'Page.loadEventFired':
        this.domReady = true;
        clearTimeout(this.stalled);
        wake(this.readyWaiters);
        this.onLoad?.();
        return;
    }
  }

  /** The target is gone, or the watch stopped: whatever waits on the page stops waiting. */
  markClosed(): void {
    this.closed = true;
    clearTimeout(this.stalled);
    wake(this.navigationWaiters);
    wake(this.readyWaiters);
  }

  isClosed(): boolean {
    return this.closed;
  }

  url(): string {
    return this.currentUrl;
  }

  evaluate(expression: string): Promise<unknown> {
    return this.run(expression, EVALUATE_TIMEOUT_MS);
  }

  waitForMainNavigation(ms: number): Promise<boolean> {
    return this.until(this.navigationWaiters, () => false, ms);
  }

  async waitForDomContentLoaded(ms: number): Promise<void> {
    await this.until(this.readyWaiters, () => this.domReady, ms);
  }

  private async run(expression: string, timeoutMs: number): Promise<unknown> {
    if (this.closed) throw new Error('Target page, context or browser has been closed');
    const r = await this.cdp.send<{ result: { value?: unknown }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
      'Runtime.evaluate',
      // As Playwright evaluates: the value returned by value, a promise awaited, a user gesture
      // (a widget started by a click may ask for one).
      { expression, returnByValue: true, awaitPromise: true, userGesture: true },
      this.sessionId,
      timeoutMs,
    );
    if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
    return r.result.value;
  }

  /** Resolves true when one of `waiters` is woken within ms (at once when `now()` holds), false otherwise. */
  private until(waiters: Set<() => void>, now: () => boolean, ms: number): Promise<boolean> {
    if (now()) return Promise.resolve(true);
    if (this.closed || ms <= 0) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        waiters.delete(wakeUp);
        resolve(value);
      };
      const wakeUp = () => done(!this.closed);
      const timer = setTimeout(() => done(false), ms);
      waiters.add(wakeUp);
    });
  }
}

function wake(waiters: Set<() => void>): void {
  for (const w of [...waiters]) w();
}
