// The one way a capability plugs into the server. A capability folder exports a factory
// that takes what it needs (database, configuration, logger, and the services of the
// capabilities composed before it, by interface) and returns a Capability: its slice of
// the contract's operations, the routes and WebSocket upgrades the contract does not
// describe, its part in every session's life, its background workers, and its start and
// shutdown. `server.ts` lists the factories once; compose.ts derives everything else.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Hono, MiddlewareHandler } from 'hono';
import type { AppHandlers } from '../http/app.js';
import type { SessionHooks } from './session.js';

export type OperationId = keyof AppHandlers;

/** Answers a WebSocket upgrade that is its own (true), or leaves it to the next (false). */
export type Upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** Sees an upgrade before the capabilities' own upgrades (`next`): answers it itself (true,
 *  as when it sends it to another node), or hands it on and answers what `next` answers. */
export type AroundUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer, next: Upgrade) => boolean;

/** A loop that takes queued work. Started after every capability has started, stopped first. */
export interface Worker {
  start(): Promise<void>;
  /** Stops claiming and finishes what is in flight. */
  stop(): Promise<void>;
}

/**
 * What a capability adds. `Ops` are the operations it serves; the composition's type proves
 * each operation of the contract is served exactly once. `Provides` is the service later
 * capabilities may depend on (merged into their factories' argument).
 */
export type Capability<Ops extends OperationId = never, Provides extends object = object> = Parts<Provides> &
  // Serving an operation means having its handler; serving none means having none.
  ([Ops] extends [never] ? { readonly handlers?: undefined } : { readonly handlers: Pick<AppHandlers, Ops> });

interface Parts<Provides extends object> {
  /** For logs. */
  readonly name: string;
  /** Routes outside the contract (pages, signed file links), added after the contract's. */
  routes?(app: Hono): void;
  readonly upgrade?: Upgrade;
  /** Runs before every route of the HTTP app (after request ids and logging), in composition
   *  order: what decides where a request is answered (a cluster's forwarding). */
  readonly middleware?: MiddlewareHandler;
  /** Wraps every WebSocket upgrade, in composition order (the first outermost). */
  readonly aroundUpgrade?: AroundUpgrade;
  readonly sessionHooks?: SessionHooks;
  readonly workers?: readonly Worker[];
  readonly provides?: Provides;
  /** Start, in composition order: recover what a killed predecessor left, open what it holds. */
  start?(): Promise<void>;
  /**
   * Shutdown, first phase, in reverse order: end what runs (sessions, requests in flight)
   * while every capability is still up to see it end.
   */
  drain?(): Promise<void>;
  /**
   * What another node, claimed dead by this one (cluster/), left in this capability's tables:
   * fail or release it, once across the cluster (each step conditional, so survivors racing,
   * or the node's own restart, change it once). Runs in composition order: the sessions'
   * ends first, then what depends on them.
   */
  recoverNode?: RecoverNode;
  /** Shutdown, last phase, in reverse order: release what it holds. */
  close?(): Promise<void>;
}

/** A node whose work is to be taken over: its id, and for a node claimed dead by another,
 *  the claim's time (the database's), before which everything of it was made: what a
 *  restart with the same id makes afterwards is not its leftovers. Undefined: everything
 *  (a node's own restart, before it makes anything). */
export interface LeftNode {
  id: string;
  before?: Date;
}

/** Takes over what a dead node left, every capability in composition order (see compose.ts). */
export type RecoverNode = (node: LeftNode) => Promise<void>;

/** Any capability, as the composition holds it once its type has been checked. */
export type AnyCapability = Parts<object> & { readonly handlers?: Partial<AppHandlers> };
