// The challenge watch of one session with `browser.captcha_solver`: every page target of its
// browser (the first tab, tabs and contexts the user's CDP client opens, pop-ups) is
// followed over a CDP connection of the server's own, and after each load of its main
// document the page is looked at once for a bot-detection challenge (challenges.ts, the
// same detection and passing as the web fetch tool). One is passed where it stands, with no
// help from the user's script, which sees the page behind it arrive.
//
// Costs are kept to what is actually a challenge: a page that is not one costs a single
// in-page look per load. Proof of work is the page's own CPU and the captcha service is paid,
// so a challenge is worked on once: a pass that fails (no captcha service configured, the
// service errors, the challenge does not clear in time) is logged and not tried again for
// the same challenge of the same URL in this session. The session goes on either way.
import type { Logger } from 'pino';
import { CdpClient } from '../browser/cdp-client.js';
import type { RunningSession } from '../capability/session.js';
import type { CaptchaSolver } from '../page/captcha-adapter.js';
import { challengeProbe, passChallenges, type DetectedChallenge } from '../page/challenges.js';
import { CdpPage } from './cdp-page.js';

/** Longest one challenge may take to pass (the web fetch tool's default limit). */
export const PASS_TIMEOUT_SECONDS = 120;

interface Watched {
  targetId: string;
  page: CdpPage;
  /** A look (or a pass) is under way; `again`: a load came meanwhile, look once more after it. */
  busy: boolean;
  again: boolean;
}

export interface WatchOptions {
  solver?: CaptchaSolver;
  log: Logger;
}

export class ChallengeWatch {
  /** By the CDP session attached to the page. */
  private readonly pages = new Map<string, Watched>();
  private readonly attaching = new Set<string>();
  /** Challenges (vendor, sitekey, URL) whose pass failed: not worked on again. */
  private readonly failed = new Set<string>();
  private readonly abort = new AbortController();
  private readonly solver?: CaptchaSolver;
  private readonly log: Logger;
  private stopped = false;

  private constructor(
    private readonly cdp: CdpClient,
    private readonly sessionId: string,
    o: WatchOptions,
  ) {
    this.log = o.log.child({ sessionId });
    const inner = o.solver;
    if (inner) {
      // Every paid call is logged (without the client key, which only the adapter holds), and
      // none outlives the session.
      this.solver = {
        solve: (task, options) => {
          this.log.info({ kind: task.kind, url: where(task.websiteURL) }, 'session captcha sent to the captcha-solving service');
          const signal = options.signal ? AbortSignal.any([options.signal, this.abort.signal]) : this.abort.signal;
          return inner.solve(task, { ...options, signal });
        },
      };
    }
  }

  static async start(s: RunningSession, o: WatchOptions): Promise<ChallengeWatch> {
    const cdp = await CdpClient.connect(s.browser.wsEndpoint);
    const watch = new ChallengeWatch(cdp, s.id, o);
    cdp.on((method, params, sessionId) => watch.onEvent(method, params, sessionId));
    try {
      // Announces the pages there are now (the first tab, with initial_url) and every new one.
      await cdp.send('Target.setDiscoverTargets', { discover: true });
    } catch (err) {
      watch.stop();
      throw err;
    }
    return watch;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort();
    for (const w of this.pages.values()) w.page.markClosed();
    this.pages.clear();
    this.cdp.close();
  }

  private onEvent(method: string, params: any, sessionId: string | undefined): void {
    if (sessionId) {
      this.pages.get(sessionId)?.page.handle(method, params);
      return;
    }
    switch (method) {
      case 'Target.targetCreated':
        if (params.targetInfo?.type === 'page') void this.attach(params.targetInfo.targetId);
        return;
      case 'Target.targetDestroyed':
        for (const [sid, w] of this.pages) if (w.targetId === params.targetId) this.drop(sid);
        return;
      case 'Target.detachedFromTarget':
        if (params.sessionId) this.drop(params.sessionId);
        return;
    }
  }

  private drop(sessionId: string): void {
    const w = this.pages.get(sessionId);
    if (!w) return;
    w.page.markClosed();
    this.pages.delete(sessionId);
  }

  private async attach(targetId: string): Promise<void> {
    if (this.stopped || this.attaching.has(targetId)) return;
    this.attaching.add(targetId);
    try {
      // Without waitForDebuggerOnStart: the page is never paused for this client.
      const { sessionId } = await this.cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
      const w: Watched = { targetId, page: new CdpPage(this.cdp, sessionId), busy: false, again: false };
      w.page.onLoad = () => this.look(w);
      this.pages.set(sessionId, w);
      // A document that loaded before the watch began (initial_url, a quick first goto) is looked at now.
      if (await w.page.init()) this.look(w);
    } catch (err) {
      if (!this.stopped) this.log.debug({ err: (err as Error).message }, 'session captcha: a page could not be followed');
    } finally {
      this.attaching.delete(targetId);
    }
  }

  /** Looks at the page once its current look is done. */
  private look(w: Watched): void {
    if (this.stopped || w.page.isClosed()) return;
    if (w.busy) {
      w.again = true;
      return;
    }
    w.busy = true;
    void (async () => {
      try {
        do {
          w.again = false;
          await this.check(w);
        } while (w.again && !this.stopped && !w.page.isClosed());
      } finally {
        w.busy = false;
      }
    })();
  }

  private async check(w: Watched): Promise<void> {
    const url = w.page.url();
    if (!/^https?:/i.test(url)) return;
    let found: DetectedChallenge | null;
    try {
      found = (await w.page.evaluate(challengeProbe())) as DetectedChallenge | null;
    } catch {
      return; // navigating on: its load brings another look
    }
    if (!found) return;
    const key = `${found.vendor}\n${found.captcha?.sitekey ?? ''}\n${url}`;
    if (this.failed.has(key)) {
      this.log.debug({ vendor: found.vendor, url: where(url) }, 'session challenge failed before: not tried again');
      return;
    }
    const started = Date.now();
    try {
      const passed = await passChallenges(w.page, {
        deadline: started + PASS_TIMEOUT_SECONDS * 1000,
        timeoutSeconds: PASS_TIMEOUT_SECONDS,
        solver: this.solver,
        log: this.log,
        first: found,
      });
      this.log.info({ challenges: passed, kind: found.kind, url: where(url), ms: Date.now() - started }, 'session page passed a bot-detection challenge');
    } catch (err) {
      if (this.stopped || w.page.isClosed()) return;
      this.failed.add(key);
      this.log.warn(
        { vendor: found.vendor, kind: found.kind, url: where(url), ms: Date.now() - started, err: (err as Error).message },
        'session page did not pass a bot-detection challenge; the session goes on',
      );
    }
  }
}

/** A page's address for logs: without its query and fragment, which may carry tokens. */
function where(url: string): string {
  try {
    const u = new URL(url);
    return u.origin + u.pathname;
  } catch {
    return '';
  }
}
