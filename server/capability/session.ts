// What a capability sees of a browser session, and the hooks through which it follows
// sessions from start to end. The sessions capability runs them; every other capability
// that acts on sessions (recording, live view, input, profiles, tasks…) only knows this.
import type { CdpClient } from '../browser/cdp-client.js';
import type { RootAddition, RunningBrowser } from '../browser/index.js';

/** An active proxy; a service proxy's type may be left out of the body. */
export type SessionProxy =
  | { type: 'service_proxy'; country_code?: string; region?: string; city?: string }
  | { type: 'custom'; server: string; username?: string; password?: string };

/** A session's configuration with every default filled in (sessions/options.ts makes it). */
export interface SessionOptions {
  initialUrl: string | undefined;
  tags: string[];
  recording: boolean;
  /** Milliseconds; undefined when disabled (-1). */
  maxDurationMs: number | undefined;
  idleTimeoutMs: number | undefined;
  liveView: { readOnly: boolean; oneTimeUrl: boolean };
  proxy: SessionProxy | undefined;
  captchaSolver: boolean;
  /** Uploaded extensions and a saved profile: they decide the launch too. */
  extensionIds: string[];
  profile: { name: string; persist: boolean } | undefined;
  /** Identities the session signs in with (the identities capability runs their logins). */
  identities: {
    ids: string[];
    /** false: an active identity's saved profile is checked, and the login runs again when it is signed out. */
    skipProfileValidation: boolean;
    /** true: the session is answered at once and the logins run in it after. */
    inBackground: boolean;
  };
}

export interface RunningSession {
  readonly id: string;
  readonly projectId: string;
  readonly options: SessionOptions;
  /** Display (headful), geometry, root. */
  readonly browser: RunningBrowser;
  /** The server's own CDP connection to the browser. */
  readonly cdp: CdpClient;
  readonly liveViewToken: string;
  /** When it started running (its maximum duration counts from here). */
  readonly createdAt: number;
  /** When its creation was asked: its row's created_at, written before its browser launched. */
  readonly askedAt: number;
  /** The service proxy pool entry its traffic goes through (a profile's sticky proxy keeps it); undefined without a service proxy. */
  readonly serviceProxyId?: string;
}

export type EndReason =
  | 'api'
  | 'idle_timeout'
  | 'max_duration'
  | 'browser_closed'
  | 'browser_unreachable'
  | 'browser_pod_not_found'
  | 'server_shutdown'
  | 'launch_failed'
  /** Its browser went over its memory cap (browser/cgroup.ts): the kernel killed its largest process. */
  | 'memory_limit';

/** How a session ended, as recorded. */
export interface SessionEnd {
  status: 'completed' | 'failed';
  reason: EndReason;
  endedAt: Date;
}

/** A session whose browser is being launched: its root exists, Chromium not yet. */
export interface LaunchingSession {
  readonly id: string;
  readonly projectId: string;
  readonly options: SessionOptions;
  readonly rootDir: string;
}

/** What capabilities add to a session's launch: extension folders they unpacked in its root, a saved profile in its user-data, client certificates in its NSS database. */
export type LaunchAddition = RootAddition;

/**
 * A capability's part in every session's life. `check`, `launching` and `started` hooks
 * run in the order the capabilities were composed, `ending` in the reverse order (a
 * capability finishes before those it builds on: the recording takes its last frame before
 * the screencast closes; profiles, composed early, close the browser gracefully last) and
 * `ended` side by side. `check` and `launching` decide whether and how the
 * session starts, so what they throw fails its creation; a later hook that throws is logged
 * and stops neither the session nor the other hooks.
 */
export interface SessionHooks {
  /** Why the project cannot have a session with these options (the 400's message), or undefined. Batches ask before they queue. */
  check?(projectId: string, options: SessionOptions): Promise<string | undefined>;
  /**
   * The service proxy pool entry the session should keep when it is healthy and matches
   * what the session asks for (a profile's dedicated sticky IP); asked only of sessions with
   * a service proxy. The first capability that names one decides.
   */
  stickyProxy?(projectId: string, options: SessionOptions): Promise<string | undefined>;
  /**
   * The session needs a browser of its own although its options would fit a warm pooled one:
   * what the capability adds at launch cannot be given to a browser already running (the
   * project's client certificates, read by Chromium at start). Any capability saying so decides.
   */
  coldLaunch?(projectId: string, options: SessionOptions): Promise<boolean>;
  /** The browser launches cold (never a warm pooled one) and its root exists: fill it, and say what that adds to the launch. */
  launching?(s: LaunchingSession): Promise<LaunchAddition | undefined>;
  /** The session is running: its browser is up and initial_url loaded. */
  started?(s: RunningSession): void | Promise<void>;
  /** The session is ending and its browser still up (flush what needs the browser). */
  ending?(s: RunningSession): Promise<void>;
  /** The end is recorded and the browser is gone. Runs after the end's answer; the server's shutdown waits for it. */
  ended?(s: RunningSession, end: SessionEnd): Promise<void>;
}
