// The envelope's `text`: a one-line human summary built from `data`, for chat-style
// receivers (Slack, Discord) that show a top-level text field. Presentation only.
import type { EventDataMap, EventType } from './types.js';

const MAX_TEXT = 300;

function seconds(ms: number | undefined): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '?';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

function bytes(n: number | undefined): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '?';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

function cost(c: { amount: number; currency: string } | undefined): string {
  return c && typeof c.amount === 'number' ? `, cost ${c.amount} ${c.currency}` : '';
}

/** Collapses whitespace (no newlines) and bounds the length. */
export function oneLine(s: string): string {
  const flat = s.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_TEXT ? `${flat.slice(0, MAX_TEXT - 1)}…` : flat;
}

type Summarizers = { [T in EventType]: (d: EventDataMap[T]) => string };

const summarizers: Summarizers = {
  'task.completed': (d) => `Task ${d.task_id} completed in ${seconds(d.duration_ms)} (execution ${d.execution_id}${cost(d.cost)})`,
  'task.failed': (d) =>
    `Task ${d.task_id} failed after ${seconds(d.duration_ms)}: ${d.error?.type ?? 'error'}${d.error?.message ? ` - ${d.error.message}` : ''}`,
  'task.cancelled': (d) => `Task ${d.task_id} was cancelled after ${seconds(d.duration_ms)} (execution ${d.execution_id})`,
  'task.healed': (d) =>
    `Task ${d.task_id} was healed: new version ${d.healed_task_version_id}${d.published_as_draft ? ' saved as a draft' : ''} (confidence ${Math.round((d.confidence_score ?? 0) * 100) / 100})`,
  'session.completed': (d) =>
    `Session ${d.session_id} completed after ${seconds(d.duration_ms)}: ${d.steps} steps, ${bytes(d.network_bytes_total)} transferred`,
  'session.failed': (d) => `Session ${d.session_id} failed after ${seconds(d.duration_ms)}: ${d.reason}`,
  'session.recording.ready': (d) => `Recording of session ${d.session_id} is ready (${seconds(d.duration_ms)}, ${bytes(d.size_bytes)})`,
  'intervention.requested': (d) => `Session ${d.session_id} needs a human: ${d.message} - take over at ${d.live_view_url}`,
  'intervention.resolved': (d) => `Intervention ${d.request_id} in session ${d.session_id} was resolved`,
  'batch.completed': (d) => `Batch ${d.batch_id} completed: ${d.completed_requests} of ${d.total_requests} sessions succeeded, ${d.failed_requests} failed`,
  'batch.failed': (d) => `Batch ${d.batch_id} failed: ${d.failed_requests} of ${d.total_requests} sessions failed`,
  'identity.authenticated': (d) => `Identity ${d.identity_id} authenticated for application ${d.application_id}`,
  'identity.authentication_failed': (d) =>
    `Identity ${d.identity_id} failed to authenticate for application ${d.application_id}: ${d.failure_type}${d.error_message ? ` - ${d.error_message}` : ''}`,
};

export function summarize<T extends EventType>(type: T, data: EventDataMap[T]): string {
  const fn = summarizers[type] as (d: EventDataMap[T]) => string;
  return oneLine(fn(data));
}
