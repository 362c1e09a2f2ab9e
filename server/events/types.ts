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

export type TaskCompletedData = EventDataMap['task.completed'];
export type TaskFailedData = EventDataMap['task.failed'];
export type TaskCancelledData = EventDataMap['task.cancelled'];
export type TaskHealedData = EventDataMap['task.healed'];
export type SessionCompletedData = EventDataMap['session.completed'];
export type SessionFailedData = EventDataMap['session.failed'];
export type SessionRecordingReadyData = EventDataMap['session.recording.ready'];
export type InterventionRequestedData = EventDataMap['intervention.requested'];
export type InterventionResolvedData = EventDataMap['intervention.resolved'];
export type BatchCompletedData = EventDataMap['batch.completed'];
export type BatchFailedData = EventDataMap['batch.failed'];
export type IdentityAuthenticatedData = EventDataMap['identity.authenticated'];
export type IdentityAuthenticationFailedData = EventDataMap['identity.authentication_failed'];

/** The envelope every event is sent in (interface.md, Events). */
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
