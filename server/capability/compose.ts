// Composes capabilities into one service. The order of `add` calls is the only order
// written down: a factory can be given only what the capabilities before it provide (the
// type check says so), so that order is a dependency order, and everything else derives
// from it: start in that order, workers after every start, shutdown in reverse (workers,
// then drains, then closes), session hooks as SessionHooks says, middleware and upgrade
// wrappers first-composed outermost. The type check also proves that each operation of the
// contract is served by exactly one capability; the order rules the type check cannot see
// are stated by the assembly and checked at build (order.ts).
import type { Hono, MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { AppHandlers } from '../http/app.js';
import type { AnyCapability, Capability, LeftNode, OperationId, RecoverNode, Upgrade, Worker } from './contract.js';
import { checkOrder, type AnyFactory, type OrderRule, type Placed } from './order.js';
import type { LaunchAddition, LaunchingSession, RunningSession, SessionEnd, SessionHooks, SessionOptions } from './session.js';

/** The composed service: what server.ts wires into HTTP and runs. */
export interface Composed<Provided extends object = object> {
  /** What the base and the capabilities provide (their services), for the assembly to hand on. */
  readonly provided: Provided;
  readonly handlers: AppHandlers;
  /** Adds every capability's own routes, in order. */
  routes(app: Hono): void;
  /** Every capability's middleware, in order: to run before every route. */
  readonly middleware: readonly MiddlewareHandler[];
  /** Through every capability's upgrade wrapper, the first composed outermost; then the
   *  first capability that takes the upgrade answers it. False: nobody took it. */
  readonly upgrade: Upgrade;
  start(): Promise<void>;
  stop(): Promise<void>;
}

type Factory<Deps, O extends OperationId, P extends object> = (deps: Deps) => Capability<O, P>;

export class Composition<Deps extends object, Ops extends OperationId> {
  private readonly capabilities: AnyCapability[] = [];
  private readonly placed: Placed[] = [];
  private readonly deps: Record<string, unknown>;

  /** @internal compose() makes the first. */
  constructor(
    base: Deps,
    private readonly hooks: HookList,
    private readonly log: Logger,
    private readonly order: readonly OrderRule[],
  ) {
    this.deps = { ...(base as Record<string, unknown>) };
  }

  /** The next capability; it may depend on what every capability before it provides. */
  add<O extends OperationId, P extends object>(
    factory: Factory<Deps, O, P>,
    ..._servedTwice: [O & Ops] extends [never] ? [] : [servedTwice: O & Ops]
  ): Composition<Deps & P, Ops | O> {
    const c = factory(this.deps as Deps) as unknown as AnyCapability;
    for (const op of Object.keys(c.handlers ?? {})) {
      const other = this.capabilities.find((o) => o.handlers && op in o.handlers);
      if (other) throw new Error(`${op} is served by both ${other.name} and ${c.name}`);
    }
    for (const key of Object.keys(c.provides ?? {})) {
      if (key in this.deps) throw new Error(`${c.name} provides ${key}, which is already provided`);
    }
    Object.assign(this.deps, c.provides);
    if (c.sessionHooks) this.hooks.add(c.name, c.sessionHooks);
    this.capabilities.push(c);
    this.placed.push({ factory: factory as AnyFactory, capability: c });
    return this as unknown as Composition<Deps & P, Ops | O>;
  }

  /** @internal What a dead node left, taken over by every capability in order; a step that
   *  fails is logged and the next still runs (the node is swept again only if one throws). */
  async recoverNode(node: LeftNode): Promise<void> {
    let failed: unknown;
    for (const c of this.capabilities) {
      try {
        await c.recoverNode?.(node);
      } catch (err) {
        this.log.error({ err, capability: c.name, nodeId: node.id }, 'taking over a dead node failed');
        failed ??= err;
      }
    }
    if (failed) throw failed;
  }

  /** The service, once every operation has its capability. */
  build(..._unserved: [Exclude<OperationId, Ops>] extends [never] ? [] : [unserved: Exclude<OperationId, Ops>]): Composed<Deps> {
    checkOrder(this.placed, this.order);
    const list = [...this.capabilities];
    const log = this.log;
    const own: Upgrade = (req, socket, head) => list.some((c) => c.upgrade?.(req, socket, head) ?? false);
    const upgrade = list.reduceRight<Upgrade>((next, c) => {
      const around = c.aroundUpgrade;
      return around ? (req, socket, head) => around(req, socket, head, next) : next;
    }, own);
    const handlers = Object.assign({}, ...list.map((c) => c.handlers)) as AppHandlers;
    // Each with its capability's name, for the log.
    const workers: { worker: Worker; of: string }[] = list.flatMap((c) => (c.workers ?? []).map((worker) => ({ worker, of: c.name })));
    // What has started, so that a failed start, or a stop, undoes exactly that.
    const started: AnyCapability[] = [];
    const running: typeof workers = [];

    const shutdown = async () => {
      const errors: unknown[] = [];
      const step = async (what: string, name: string, fn: () => Promise<void>) => {
        // At debug, a stop that does not end says which step it waits in: the last one logged.
        log.debug({ capability: name }, what);
        try {
          await fn();
        } catch (err) {
          log.error({ err, capability: name }, `${what} failed`);
          errors.push(err);
        }
      };
      for (const w of running.splice(0).reverse()) await step('worker stop', w.of, () => w.worker.stop());
      const stopping = started.splice(0).reverse();
      for (const c of stopping) if (c.drain) await step('drain', c.name, () => c.drain!());
      for (const c of stopping) if (c.close) await step('close', c.name, () => c.close!());
      if (errors.length) throw errors[0];
    };

    return {
      provided: this.deps as Deps,
      handlers,
      routes: (app) => {
        for (const c of list) c.routes?.(app);
      },
      middleware: list.flatMap((c) => (c.middleware ? [c.middleware] : [])),
      upgrade,
      start: async () => {
        try {
          for (const c of list) {
            started.push(c);
            await c.start?.();
          }
          for (const w of workers) {
            running.push(w);
            await w.worker.start();
          }
        } catch (err) {
          await shutdown().catch(() => {});
          throw err;
        }
      },
      stop: shutdown,
    };
  }
}

/** Starts a composition on the base every factory may use; `order`: the rules its list must keep (checked at build). */
export function compose<Base extends { log: Logger }>(
  base: Base,
  order: readonly OrderRule[] = [],
): Composition<Base & { sessionHooks: SessionHooks; recoverNode: RecoverNode }, never> {
  const hooks = new HookList(base.log);
  const composition: Composition<Base & { sessionHooks: SessionHooks; recoverNode: RecoverNode }, never> = new Composition(
    // Called at run time (a node found dead), when every capability has been added.
    { ...base, sessionHooks: hooks, recoverNode: (node: LeftNode) => composition.recoverNode(node) },
    hooks,
    base.log,
    order,
  );
  return composition;
}

/** Every capability's session hooks as one: started in order, ending in reverse, ended side by side. */
class HookList implements SessionHooks {
  private readonly list: { name: string; hooks: SessionHooks }[] = [];

  constructor(private readonly log: Logger) {}

  add(name: string, hooks: SessionHooks): void {
    this.list.push({ name, hooks });
  }

  async check(projectId: string, options: SessionOptions): Promise<string | undefined> {
    for (const { hooks } of this.list) {
      const refused = await hooks.check?.(projectId, options);
      if (refused) return refused;
    }
    return undefined;
  }

  async stickyProxy(projectId: string, options: SessionOptions): Promise<string | undefined> {
    for (const { hooks } of this.list) {
      const id = await hooks.stickyProxy?.(projectId, options);
      if (id) return id;
    }
    return undefined;
  }

  async launching(s: LaunchingSession): Promise<LaunchAddition> {
    const extensionDirs: string[] = [];
    const autoSelectCertificates: NonNullable<LaunchAddition['autoSelectCertificates']> = [];
    let userData = false;
    for (const { hooks } of this.list) {
      const added = await hooks.launching?.(s);
      extensionDirs.push(...(added?.extensionDirs ?? []));
      autoSelectCertificates.push(...(added?.autoSelectCertificates ?? []));
      userData ||= added?.userData === true;
    }
    return { extensionDirs, userData, autoSelectCertificates };
  }

  async coldLaunch(projectId: string, options: SessionOptions): Promise<boolean> {
    for (const { hooks } of this.list) if (await hooks.coldLaunch?.(projectId, options)) return true;
    return false;
  }

  async started(s: RunningSession): Promise<void> {
    for (const { name, hooks } of this.list) await this.run(name, 'started', s.id, () => hooks.started?.(s));
  }

  async ending(s: RunningSession): Promise<void> {
    for (const { name, hooks } of [...this.list].reverse()) await this.run(name, 'ending', s.id, () => hooks.ending?.(s));
  }

  /** Side by side: the browser is gone, and one capability's long work (a recording's encode) must not hold up another's (a profile's save). */
  async ended(s: RunningSession, end: SessionEnd): Promise<void> {
    await Promise.all(this.list.map(({ name, hooks }) => this.run(name, 'ended', s.id, () => hooks.ended?.(s, end))));
  }

  private async run(capability: string, hook: string, sessionId: string, fn: () => unknown): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.log.error({ sessionId, capability, hook, err }, 'session hook failed');
    }
  }
}
