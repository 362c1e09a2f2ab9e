// Event types and the shape of each type's `data`. The contract (openapi.yaml, top-level
// `webhooks:` section, one entry per type) is the source: EventDataMap below is derived
// from the types generated from it, and this is the only place the (type, data) pairing
// is defined. emitEvent, the summaries and the test-event samples are all typed by it, so
// a contract change that breaks an emitter is a compile error.
import type { webhooks } from '../../generated/types.js';

export const EVENT_TYPES = [
  'task.completed',
  'task.failed',
  'task.cancelled',
  'task.healed',
  'session.completed',
  'session.failed',
  'session.recording.ready',
  'intervention.requested',
  'intervention.resolved',
  'batch.completed',
  'batch.failed',
  'identity.authenticated',
  'identity.authentication_failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

const known: ReadonlySet<string> = new Set(EVENT_TYPES);
export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && known.has(value);
}

/** The documented body (envelope) of one event type. */
type ContractEvent<T extends EventType> = NonNullable<webhooks[T]['post']['requestBody']>['content']['application/json'];

/** THE (type → data) map, from generated/types.ts. */
export type EventDataMap = { [T in EventType]: ContractEvent<T>['data'] };

// A compile error here means EVENT_TYPES and the contract's event types disagree.
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const typesMatchContract: Exact<keyof webhooks, EventType> = true;
void typesMatchContract;

/** The envelope every event is sent in (the contract, openapi.yaml: Events). */
export interface EventEnvelope<T extends EventType = EventType> {
  id: string;
  type: T;
  created: string;
  project_id: string;
  text: string;
  data: EventDataMap[T];
}

/** An envelope of any type, for code that handles them all (the worker, tests). */
export type AnyEventEnvelope = { [T in EventType]: EventEnvelope<T> }[EventType];
