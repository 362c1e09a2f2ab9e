// The capability contract (contract.ts), what capabilities see of sessions (session.ts),
// their composition (compose.ts) and its order rules (order.ts).
export type { AroundUpgrade, Capability, LeftNode, OperationId, RecoverNode, Upgrade, Worker } from './contract.js';
export type { OrderRule } from './order.js';
export type { EndReason, LaunchAddition, LaunchingSession, RunningSession, SessionEnd, SessionHooks, SessionOptions, SessionProxy } from './session.js';
export { compose, Composition, type Composed } from './compose.js';
export { PollLoop, type PollLoopOptions } from './poll-loop.js';
export { createSignals, KeyedSignal, Signal, type Signals } from './signals.js';
