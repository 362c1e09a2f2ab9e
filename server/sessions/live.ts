// What the lifecycle holds of this node's sessions: a session running here, a warm browser
// reserved for a session to come, and the table of both that every step reads (creation
// claims a slot in it, the end empties it, the manager's drain, stop and time-outs walk
// it). State only: the steps that change it live in create.ts, end.ts and warm.ts.
import type { Logger } from 'pino';
import type { CdpClient } from '../browser/cdp-client.js';
import type { RunningBrowser } from '../browser/index.js';
import type { EndReason, RunningSession, SessionHooks, SessionOptions, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { TrafficProxy } from '../net/traffic-proxy.js';
import type { Db } from '../store/db.js';
import type { SessionBrowser } from './session-browser.js';
import type { SessionRow } from './store.js';

/** What the CDP proxy counts of a browser's traffic: a session's, or a reservation's until it is one. */
export interface Counted {
  lastActivity: number;
  steps: number;
  screenshots: number;
  /** A CDP client sent Browser.close: the browser's exit that follows is a clean end. */
  closeRequested: boolean;
}

export interface LiveSession extends RunningSession, Counted {
  id: string;
  projectId: string;
  cdpToken: string;
  liveViewToken: string;
  options: SessionOptions;
  browser: RunningBrowser;
  traffic: TrafficProxy;
  cdp: CdpClient;
  createdAt: number;
  ending?: Promise<SessionRow | undefined>;
}

/**
 * A warm browser taken from the pool for one future session (a task run's warm pair): its
 * id and CDP token are the session's to be, so that a client (the run's sandbox) can connect
 * through the CDP proxy, as to the session, before the session exists. Not a session: no
 * row, no event, nothing billed, not counted against the browser limit (as a pooled browser
 * is not). It becomes the session (create with CreateOptions.reserved) or is ended.
 */
export interface Reservation extends Counted {
  id: string;
  cdpToken: string;
  sb: SessionBrowser;
  /** The server's own CDP connection to it, opened ahead too (undefined: it failed; the session opens one). */
  cdp: Promise<CdpClient | undefined>;
  /** The session it became, once it did: its traffic is counted there from then on. */
  live?: LiveSession;
  gone: () => void;
}

/** How a session was asked to end; the abort reason of a launch that end() stops. */
export interface EndRequest {
  status: 'completed' | 'failed';
  reason: EndReason;
  deleted: boolean;
}

/** What the lifecycle is given by the composition. */
export interface LifecycleDeps {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  /** The composed capabilities' part in every session's life. */
  sessionHooks: SessionHooks;
  /** Told when an end is recorded (a task run waits for its session's), and its event written. */
  signals: Pick<Signals, 'endRecorded' | 'deliveriesWritten'>;
}

/** What each step of the lifecycle is given: the composition's, and this node's table. */
export interface StepDeps extends LifecycleDeps {
  table: SessionTable;
}

/** This node's sessions, running and starting, and whether it still takes new ones. */
export class SessionTable {
  readonly live = new Map<string, LiveSession>();
  /** Sessions whose browser is being launched, by id: end() and stop() abort them. */
  readonly starting = new Map<string, AbortController>();
  /** stop() began: nothing starts here any more. */
  stopped = false;
  /** SIGTERM received (drain): no new session here, the running ones may finish. */
  draining = false;

  /** A session running here that is not ending. */
  running(id: string): LiveSession | undefined {
    const s = this.live.get(id);
    return s && !s.ending ? s : undefined;
  }

  /** Browsers running or starting here. */
  get busy(): number {
    return this.live.size + this.starting.size;
  }
}
