// The parts the sessions capability plays for the others. A capability takes the role it
// uses, not the manager whole, so its signature says what it may do to a session: find one
// and report its activity (lookup), make and end one (lifecycle), say how a client reaches
// one (urls), read what this node carries (node load), or set a warm browser aside for a
// session to come (warm source). The SessionManager plays every role; a test fakes one.
import type { EndReason, RunningSession } from '../capability/index.js';
import type { PageTarget } from '../browser/cdp-client.js';
import type { CreateOptions, CreateResult } from './create.js';
import type { SessionCreateBody } from './options.js';
import type { SessionRow } from './store.js';
import type { WarmReservation } from './warm.js';

/** The sessions running on this node, for the capabilities that act on one. */
export interface SessionLookup {
  /** A session running here, whatever its project (undefined once it is ending). */
  get(id: string): RunningSession | undefined;
  /**
   * The project's session running here, or the answer an operation on it gives: 404 for a
   * session the project does not have, 409 for one still starting or ended.
   */
  lookup(projectId: string, id: string): Promise<RunningSession | { status: 404 | 409; message: string }>;
  /** The project's sessions running here, oldest first. */
  runningOf(projectId: string): RunningSession[];
  /**
   * Activity from outside the CDP proxy (input, a live-view viewer, the server's own CDP
   * clients): it keeps the session from its idle timeout; a screenshot is billed as a step.
   */
  touch(id: string, kind: 'input' | 'liveview' | 'screenshot'): boolean;
  /** The session's pages, the one in front marked active; undefined when it is not running here. */
  pages(id: string): Promise<(PageTarget & { active: boolean })[] | undefined>;
}

/** Sessions made and ended: by the API, a batch's items, a task's runs, an agent, MCP. */
export interface SessionLifecycle {
  /** Why create() would refuse this body with 400, or undefined. */
  validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined>;
  create(owner: { projectId: string; apiKeyId: string }, body: SessionCreateBody | undefined, options?: CreateOptions): Promise<CreateResult>;
  /** Ends a session on this node; its ended row, or undefined if it had ended. */
  end(
    id: string,
    status: 'completed' | 'failed',
    reason: EndReason,
    options?: { deleted?: boolean; answerNow?: boolean; teardownAfter?: Promise<unknown> },
  ): Promise<SessionRow | undefined>;
}

/** How a client reaches a session: through the CDP proxy, and the live view. */
export interface SessionUrls {
  cdpUrl(id: string, token: string): string;
  liveViewUrl(id: string, token: string): string;
  /** The cdp_url of a session running here (the server's runners of user code connect like any client). */
  cdpUrlOf(id: string): string | undefined;
  /** The browser's /json/version, with the session's cdp_url in place of its own endpoint. */
  browserEndpoint(id: string, token: string): { wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized';
  /** The same for the vendor SDK's address, opened by an API key of the session's project. */
  browserEndpointByKey(id: string, apiKey: string): Promise<{ wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized'>;
}

/** What this node carries: for heartbeats, metrics, health, and the workers that claim work. */
export interface NodeLoad {
  readonly nodeId: string;
  /** Sessions running here. */
  readonly running: number;
  /** Warm browsers ready in the pool. */
  readonly warm: number;
  /** Browsers that may still start before the concurrent-browser limit (none while draining). */
  readonly capacity: number;
  /** Browsers running or starting here. */
  readonly busy: number;
  readonly isDraining: boolean;
}

/** Warm browsers set aside for sessions to come (a task run's warm pair). */
export interface WarmSource {
  /** A warm browser for one session to come, or undefined when the pool has none ready. */
  reserveWarm(): WarmReservation | undefined;
  /** Resolves once the pool is full again (or closed, or absent). */
  whenWarm(): Promise<void>;
  /** Whether a reserved browser may serve this body, as far as is known without the database. */
  reservedFits(body: SessionCreateBody | undefined): boolean;
}
