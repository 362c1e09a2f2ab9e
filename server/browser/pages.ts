// Which page of a session is the one on screen. Chromium's Target.getTargets lists pages in
// creation order, not by focus, and no CDP event says which tab is in front; a page's
// document.visibilityState does: in a window exactly one tab is `visible` (headful and
// headless alike), background tabs are `hidden`. The screencast follows that page, and
// input, goto and screenshots act on it.
import { listPages, type CdpClient, type PageTarget } from './cdp-client.js';

/**
 * Flat CDP sessions attached to page targets over one connection, attached once and reused
 * for short commands (a visibility check, input, a screencast). Forgets a session when its
 * target goes away or detaches.
 */
export class PageSessions {
  private readonly byTarget = new Map<string, Promise<string>>();
  private readonly off: () => void;

  constructor(private readonly cdp: CdpClient) {
    this.off = cdp.on((method, params: { targetId?: string; sessionId?: string }) => {
      if (method === 'Target.targetDestroyed' && params.targetId) this.byTarget.delete(params.targetId);
      if (method === 'Target.detachedFromTarget') {
        if (params.targetId) this.byTarget.delete(params.targetId);
        else void this.dropSession(params.sessionId);
      }
    });
  }

  /** The flat session of a page target, attaching on first use. */
  session(targetId: string): Promise<string> {
    let p = this.byTarget.get(targetId);
    if (!p) {
      p = this.cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true }).then((r) => r.sessionId);
      this.byTarget.set(targetId, p);
      p.catch(() => this.byTarget.get(targetId) === p && this.byTarget.delete(targetId));
    }
    return p;
  }

  /** Sends a command to a page, attaching again once if its session had gone stale. */
  async send<T = any>(targetId: string, method: string, params: object = {}, timeoutMs?: number): Promise<T> {
    const sessionId = await this.session(targetId);
    try {
      return await this.cdp.send<T>(method, params, sessionId, timeoutMs);
    } catch (err) {
      if (!/session|target/i.test((err as Error).message)) throw err;
      this.byTarget.delete(targetId);
      return this.cdp.send<T>(method, params, await this.session(targetId), timeoutMs);
    }
  }

  forget(targetId: string): void {
    this.byTarget.delete(targetId);
  }

  /** Detaches every session (best effort) and stops listening. */
  async close(): Promise<void> {
    this.off();
    const sessions = await Promise.all([...this.byTarget.values()].map((p) => p.catch(() => undefined)));
    this.byTarget.clear();
    await Promise.all(sessions.map((sessionId) => sessionId && this.cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {})));
  }

  private async dropSession(sessionId: string | undefined): Promise<void> {
    if (!sessionId) return;
    for (const [targetId, p] of this.byTarget) {
      if ((await p.catch(() => undefined)) === sessionId) this.byTarget.delete(targetId);
    }
  }
}

export type Visibility = 'visible' | 'hidden' | 'unknown';

export async function visibility(pages: PageSessions, targetId: string): Promise<Visibility> {
  try {
    const r = await pages.send<{ result: { value?: string } }>(
      targetId,
      'Runtime.evaluate',
      { expression: 'document.visibilityState', returnByValue: true },
      // A page busy in a long script, or paused for a debugger, must not hold us up.
      2_000,
    );
    return r.result.value === 'visible' ? 'visible' : r.result.value === 'hidden' ? 'hidden' : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Whether the page's document has the focus: of several visible windows, the one brought to front. */
export async function focused(pages: PageSessions, targetId: string): Promise<boolean> {
  try {
    const r = await pages.send<{ result: { value?: boolean } }>(
      targetId,
      'Runtime.evaluate',
      { expression: 'document.hasFocus()', returnByValue: true },
      2_000,
    );
    return r.result.value === true;
  } catch {
    return false;
  }
}

/**
 * The page in front: `current` while it is still visible (two windows can both show a
 * page), else the newest visible page, else `current` if it still exists, else the newest
 * page; undefined when the browser has no page.
 */
export async function activePage(cdp: CdpClient, pages: PageSessions, current?: string): Promise<PageTarget | undefined> {
  const all = await listPages(cdp);
  if (all.length === 0) return undefined;
  const states = await Promise.all(all.map((p) => visibility(pages, p.targetId)));
  const visible = all.filter((_, i) => states[i] === 'visible');
  return visible.find((p) => p.targetId === current) ?? visible[visible.length - 1] ?? all.find((p) => p.targetId === current) ?? all[all.length - 1];
}
