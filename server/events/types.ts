// Event types and the shape of each type's `data`, from interface.md's Events tables.
// EventDataMap is the single place the (type, data) pairing is defined: when openapi.yaml
// documents the events (its `webhooks:` section) and generated/ has their types, replace
// the hand-written map below with the generated one in this one line:
//   export type EventDataMap = GeneratedEventDataMap;

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

export interface TaskCost {
  amount: number;
  currency: string;
}

export interface TaskArtifact {
  name: string;
  url: string;
  size?: number;
  content_type?: string;
}

interface TaskRunBase {
  task_id: string;
  task_version_id: string;
  execution_id: string;
  /** Only for executions started through POST /v2/tasks/{taskId}/run. */
  run_id?: string;
  session_id: string;
  duration_ms: number;
  cost: TaskCost;
  artifacts: TaskArtifact[];
  recording_url?: string;
  session_dashboard_url: string;
}

export interface TaskCompletedData extends TaskRunBase {
  execution_mode: string;
  output: { value: Record<string, unknown> };
}

export type TaskErrorType = 'agent_error' | 'timeout' | 'automation_failure' | 'invalid_credentials' | 'system_error';

export interface TaskFailedData extends TaskRunBase {
  error: { type: TaskErrorType; message: string; root_cause: string };
}

export interface TaskCancelledData extends TaskRunBase {
  execution_mode: string;
}

export interface TaskHealedData {
  task_id: string;
  healed_task_version_id: string;
  source_execution_id: string;
  run_id: string;
  error_explanation: string;
  fix_suggestion: string;
  confidence_score: number;
  published_as_draft: boolean;
}

export interface SessionCompletedData {
  session_id: string;
  duration_ms: number;
  proxy_bytes: number;
  network_bytes_total: number;
  steps: number;
  screenshots: number;
  domains: string[];
  session_dashboard_url: string;
  /** Why it ended, e.g. deleted, idle_timeout, max_duration. */
  reason?: string;
}

export interface SessionFailedData {
  session_id: string;
  duration_ms: number;
  /** Coarse machine-readable category, e.g. browser_unreachable, browser_pod_not_found. */
  reason: string;
  session_dashboard_url: string;
}

export interface SessionRecordingReadyData {
  session_id: string;
  duration_ms: number;
  size_bytes: number;
  session_dashboard_url: string;
}

export interface InterventionRequestedData {
  session_id: string;
  request_id: string;
  message: string;
  input_type: string;
  live_view_url: string;
}

export interface InterventionResolvedData {
  session_id: string;
  request_id: string;
}

export interface BatchEventData<S extends 'completed' | 'failed' = 'completed' | 'failed'> {
  batch_id: string;
  total_requests: number;
  completed_requests: number;
  failed_requests: number;
  status: S;
}

export interface IdentityAuthenticatedData {
  identity_id: string;
  application_id: string;
  session_id: string;
  execution_id: string;
}

export interface IdentityAuthenticationFailedData {
  identity_id: string;
  application_id: string;
  execution_id: string;
  failure_type: 'invalid_credentials' | 'automation_failure';
  error_message: string;
}

interface HandWrittenEventDataMap {
  'task.completed': TaskCompletedData;
  'task.failed': TaskFailedData;
  'task.cancelled': TaskCancelledData;
  'task.healed': TaskHealedData;
  'session.completed': SessionCompletedData;
  'session.failed': SessionFailedData;
  'session.recording.ready': SessionRecordingReadyData;
  'intervention.requested': InterventionRequestedData;
  'intervention.resolved': InterventionResolvedData;
  'batch.completed': BatchEventData<'completed'>;
  'batch.failed': BatchEventData<'failed'>;
  'identity.authenticated': IdentityAuthenticatedData;
  'identity.authentication_failed': IdentityAuthenticationFailedData;
}

/** THE (type → data) map. Switch to the generated types here, and only here. */
export type EventDataMap = HandWrittenEventDataMap;

// A compile error here means EVENT_TYPES and EventDataMap disagree.
type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const mapCoversTypes: Exact<keyof EventDataMap, EventType> = true;
void mapCoversTypes;

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
