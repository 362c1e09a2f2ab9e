// compose() at run time: the order its header promises (start in order, workers after every
// start, shutdown in reverse: workers, drains, closes), a failed start undoing exactly what
// started, the session hooks' order, middleware and upgrade wrappers in order, and the order
// rules refused when broken. compose.typetest.ts proves the rest at compile time.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.js';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { MiddlewareHandler } from 'hono';
import type { Capability, Composed, OrderRule, RunningSession, SessionEnd, Upgrade, Worker } from './index.js';
import { compose } from './index.js';

/** A logger whose error lines the test reads. */
function recordingLog() {
  const lines: { msg: string; capability?: string; hook?: string }[] = [];
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { log: createLogger('error', out), lines };
}

/** A capability that writes what happens to it into `events`; `fail` names the step that throws. */
function part(name: string, events: string[], fail: { start?: boolean; drain?: boolean; close?: boolean; worker?: boolean } = {}) {
  const step = (what: string, throws?: boolean) => async () => {
    events.push(`${what} ${name}`);
    if (throws) throw new Error(`${what} ${name} failed`);
  };
  const worker: Worker = { start: step('worker start', fail.worker), stop: step('worker stop') };
  return (): Capability => ({
    name,
    start: step('start', fail.start),
    drain: step('drain', fail.drain),
    close: step('close', fail.close),
    workers: [worker],
  });
}

/** The composition of the given parts, built without serving the contract's operations (the type check's business). */
function build(...factories: (() => Capability)[]): Composed {
  return buildOrdered([], ...factories);
}

function buildOrdered(order: OrderRule[], ...factories: (() => Capability)[]): Composed {
  let c = compose({ log: recordingLog().log }, order) as unknown as { add(f: () => Capability): typeof c; build(): Composed };
  for (const f of factories) c = c.add(f);
  return c.build();
}

describe('compose', () => {
  it('starts in order, workers after every start; stops workers, then drains, then closes, each in reverse', async () => {
    const events: string[] = [];
    const service = build(part('a', events), part('b', events));
    await service.start();
    expect(events.splice(0)).toEqual(['start a', 'start b', 'worker start a', 'worker start b']);
    await service.stop();
    expect(events).toEqual(['worker stop b', 'worker stop a', 'drain b', 'drain a', 'close b', 'close a']);
  });

  it('undoes a failed start exactly: what started (the failing one included) is drained and closed, what did not is left alone', async () => {
    const events: string[] = [];
    const service = build(part('a', events), part('b', events, { start: true }), part('c', events));
    await expect(service.start()).rejects.toThrow('start b failed');
    expect(events).toEqual(['start a', 'start b', 'drain b', 'drain a', 'close b', 'close a']);
  });

  it('a worker that fails to start stops the workers started before it and every capability', async () => {
    const events: string[] = [];
    const service = build(part('a', events), part('b', events, { worker: true }));
    await expect(service.start()).rejects.toThrow('worker start b failed');
    expect(events).toEqual([
      'start a',
      'start b',
      'worker start a',
      'worker start b',
      'worker stop b',
      'worker stop a',
      'drain b',
      'drain a',
      'close b',
      'close a',
    ]);
  });

  it('a failed drain or close does not stop the shutdown: every step runs, the first error is thrown', async () => {
    const events: string[] = [];
    const service = build(part('a', events, { close: true }), part('b', events, { drain: true }));
    await service.start();
    events.length = 0;
    await expect(service.stop()).rejects.toThrow('drain b failed');
    expect(events).toEqual(['worker stop b', 'worker stop a', 'drain b', 'drain a', 'close b', 'close a']);
    // Stopped once: a second stop has nothing left to undo.
    events.length = 0;
    await service.stop();
    expect(events).toEqual([]);
  });

  it('refuses an operation served twice and a service provided twice', () => {
    const served = (name: string) => () => ({ name, handlers: { getBilling: async () => ({ status: 200, body: {} }) } }) as unknown as Capability;
    const c = compose({ log: recordingLog().log }) as unknown as { add(f: () => Capability): typeof c };
    expect(() => c.add(served('a')).add(served('b'))).toThrow('getBilling is served by both a and b');
    const providing = (name: string) => () => ({ name, provides: { thing: name } }) as Capability;
    const d = compose({ log: recordingLog().log }) as unknown as { add(f: () => Capability): typeof d };
    expect(() => d.add(providing('a')).add(providing('b'))).toThrow('b provides thing, which is already provided');
  });

  it('hands a factory what the capabilities before it provide', () => {
    let seen: unknown;
    const first = () => ({ name: 'first', provides: { greeting: 'hello' } }) as Capability;
    const second = (deps: { greeting?: string }) => {
      seen = deps.greeting;
      return { name: 'second' } as Capability;
    };
    const c = compose({ log: recordingLog().log }) as unknown as { add(f: (deps: any) => Capability): typeof c };
    c.add(first).add(second);
    expect(seen).toBe('hello');
  });

  it('takes over a dead node in order, every capability even after one fails, then throws that failure', async () => {
    const events: string[] = [];
    const { log, lines } = recordingLog();
    const recovering =
      (name: string, throws = false) =>
      () =>
        ({
          name,
          recoverNode: async (node: { id: string }) => {
            events.push(`${name} ${node.id}`);
            if (throws) throw new Error(`${name} failed`);
          },
        }) as Capability;
    let deps: { recoverNode?: (n: { id: string }) => Promise<void> } = {};
    const c = compose({ log }) as unknown as { add(f: (d: any) => Capability): typeof c };
    c.add((d) => {
      deps = d;
      return { name: 'probe' } as Capability;
    })
      .add(recovering('a'))
      .add(recovering('b', true))
      .add(recovering('c'));
    await expect(deps.recoverNode!({ id: 'node-1' })).rejects.toThrow('b failed');
    expect(events).toEqual(['a node-1', 'b node-1', 'c node-1']);
    expect(lines.map((l) => [l.msg, l.capability])).toEqual([['taking over a dead node failed', 'b']]);
  });

  it('runs session hooks as SessionHooks says: started in order, ending in reverse, ended side by side; a failing hook is logged and the rest run', async () => {
    const events: string[] = [];
    const { log, lines } = recordingLog();
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const hooked =
      (name: string, o: { endedWaits?: boolean; startedThrows?: boolean; refuses?: boolean } = {}) =>
      () =>
        ({
          name,
          sessionHooks: {
            check: async () => (o.refuses ? `refused by ${name}` : undefined),
            started: async () => {
              events.push(`started ${name}`);
              if (o.startedThrows) throw new Error('boom');
            },
            ending: async () => void events.push(`ending ${name}`),
            ended: async () => {
              events.push(`ended ${name} begins`);
              if (o.endedWaits) await slow;
              events.push(`ended ${name} done`);
            },
          },
        }) as Capability;
    let hooks!: { check: Function; started: Function; ending: Function; ended: Function };
    const c = compose({ log }) as unknown as { add(f: (d: any) => Capability): typeof c };
    c.add((d) => {
      hooks = d.sessionHooks;
      return { name: 'probe' } as Capability;
    })
      .add(hooked('a', { endedWaits: true, startedThrows: true }))
      .add(hooked('b', { refuses: true }))
      .add(hooked('c', { refuses: true }));
    const s = { id: 'session-1' } as RunningSession;

    expect(await hooks.check('project', {})).toBe('refused by b');
    await hooks.started(s);
    expect(events.splice(0)).toEqual(['started a', 'started b', 'started c']);
    expect(lines.map((l) => [l.msg, l.capability, l.hook])).toEqual([['session hook failed', 'a', 'started']]);
    await hooks.ending(s);
    expect(events.splice(0)).toEqual(['ending c', 'ending b', 'ending a']);
    // a's ended hook waits; b's and c's do not wait for it.
    const ended = hooks.ended(s, { status: 'completed', reason: 'api' } as unknown as SessionEnd);
    await new Promise((r) => setImmediate(r));
    expect(events).toEqual(['ended a begins', 'ended b begins', 'ended b done', 'ended c begins', 'ended c done']);
    release();
    await ended;
    expect(events.at(-1)).toBe('ended a done');
  });

  it('runs middleware in order; wraps upgrades first-composed outermost, then the first own upgrade that takes it answers', async () => {
    const events: string[] = [];
    const middleware =
      (name: string): MiddlewareHandler =>
      async (_c, next) => {
        events.push(`before ${name}`);
        await next();
        events.push(`after ${name}`);
      };
    const wrapping =
      (name: string, answers = false) =>
      () =>
        ({
          name,
          middleware: middleware(name),
          aroundUpgrade: (req, socket, head, next) => (events.push(`around ${name}`), answers || next(req, socket, head)),
        }) as Capability;
    const own = (name: string, takes: boolean) => () => ({ name, upgrade: (() => (events.push(`own ${name}`), takes)) as Upgrade }) as Capability;
    const service = build(wrapping('a'), own('x', false), wrapping('b'), own('y', true), own('z', true));
    const [req, socket, head] = [{} as IncomingMessage, {} as Duplex, Buffer.alloc(0)];

    expect(service.upgrade(req, socket, head)).toBe(true);
    expect(events.splice(0)).toEqual(['around a', 'around b', 'own x', 'own y']);
    expect(build(wrapping('a'), own('x', false)).upgrade(req, socket, head)).toBe(false);
    events.length = 0;
    expect(build(wrapping('a', true), wrapping('b'), own('y', true)).upgrade(req, socket, head)).toBe(true);
    expect(events.splice(0)).toEqual(['around a']);

    const { Hono } = await import('hono');
    const app = new Hono();
    for (const m of service.middleware) app.use('*', m);
    app.get('/', (c) => (events.push('route'), c.text('ok')));
    expect((await app.request('/')).status).toBe(200);
    expect(events).toEqual(['before a', 'before b', 'route', 'after b', 'after a']);
  });

  it('builds a list that keeps its order rules, and refuses one that breaks a rule or lacks what a rule names', () => {
    const plain = (name: string) => Object.defineProperty(() => ({ name }) as Capability, 'name', { value: name });
    const recovering = (name: string) => Object.defineProperty(() => ({ name, recoverNode: async () => {} }) as Capability, 'name', { value: name });
    const [a, b, c, r1, r2] = [plain('a'), plain('b'), plain('c'), recovering('r1'), recovering('r2')];
    const rules: OrderRule[] = [
      { first: [a], then: [b, c], why: 'a ends last' },
      { first: { everyWith: 'recoverNode' }, then: [c], why: 'c takes dead nodes over through them' },
    ];
    expect(() => buildOrdered(rules, a, r1, b, r2, c)).not.toThrow();
    expect(() => buildOrdered(rules, b, a, r1, c)).toThrow('b must be composed after a: a ends last');
    expect(() => buildOrdered(rules, a, b, c, r1)).toThrow('c must be composed after r1: c takes dead nodes over through them');
    expect(() => buildOrdered(rules, a, b)).toThrow('An order rule names c, which is not composed (a ends last)');
  });
});
