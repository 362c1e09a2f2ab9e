// Type-level tests, run by `pnpm typecheck` (tsc): each @ts-expect-error below must be an
// error, or tsc fails with "Unused '@ts-expect-error' directive". They prove that the
// composition refuses an operation served twice, a service without every operation, a
// capability added before what it depends on, and a capability that claims an operation
// it has no handler for.
import type { Logger } from 'pino';
import type { AppHandlers } from '../http/app.js';
import type { Capability, OperationId } from './contract.js';
import { compose } from './compose.js';

declare const log: Logger;
declare const all: AppHandlers;
type Rest = Exclude<OperationId, 'getBilling'>;
const { getBilling, ...rest } = all;

const billing = (): Capability<'getBilling'> => ({ name: 'billing', handlers: { getBilling } });
const everythingElse = (): Capability<Rest> => ({ name: 'rest', handlers: rest });
const counter = (): Capability<never, { counter: { n: number } }> => ({ name: 'counter', provides: { counter: { n: 0 } } });
const needsCounter = (d: { counter: { n: number } }): Capability => ({ name: `needs ${d.counter.n}` });

// Every operation once, dependencies first: it builds.
export const whole = () => compose({ log }).add(counter).add(needsCounter).add(billing).add(everythingElse).build();

// @ts-expect-error getBilling is served twice
export const twice = () => compose({ log }).add(billing).add(everythingElse).add(billing);

// @ts-expect-error getBilling is served by nobody
export const unserved = () => compose({ log }).add(everythingElse).build();

// @ts-expect-error needsCounter comes before the capability that provides counter
export const early = () => compose({ log }).add(needsCounter).add(counter);

// @ts-expect-error a capability that serves getBilling must have its handler
export const noHandler: Capability<'getBilling'> = { name: 'billing' };

// @ts-expect-error a capability that serves nothing has no handlers
export const strayHandler: Capability = { name: 'billing', handlers: { getBilling } };
