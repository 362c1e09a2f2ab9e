// Synthetic event data for POST /v1/webhooks/{id}/test: one realistic, schema-valid `data`
// per event type, with fresh identifiers so receivers can tell test deliveries apart.
import { randomUUID } from 'node:crypto';
import type { EventDataMap, EventType } from '../outbox/types.js';
import { sessionDashboardUrl } from '../outbox/links.js';

export interface SampleContext {
  /** Base of dashboard and live-view links (the server's PUBLIC_URL). */
  publicUrl?: string;
}

export function sampleEventData<T extends EventType>(type: T, ctx: SampleContext = {}): EventDataMap[T] {
  const base = (ctx.publicUrl ?? 'http://localhost:8080').replace(/\/+$/, '');
  const sessionId = randomUUID();
  const taskId = randomUUID();
  const executionId = randomUUID();
  const dashboard = sessionDashboardUrl(base, sessionId);
  const taskBase = {
    task_id: taskId,
    task_version_id: randomUUID(),
    execution_id: executionId,
    session_id: sessionId,
    duration_ms: 12_345,
    cost: { amount: 0.05, currency: 'credits' },
    artifacts: [] as EventDataMap['task.completed']['artifacts'],
    session_dashboard_url: dashboard,
  };
  const samples: { [K in EventType]: () => EventDataMap[K] } = {
    'task.completed': () => ({
      ...taskBase,
      execution_mode: 'deterministic',
      output: { value: { title: 'Example Domain' } },
      artifacts: [{ name: 'result.json', url: `${base}/artifacts/${executionId}/result.json`, size: 27, content_type: 'application/json' }],
      recording_url: `${base}/v1/sessions/${sessionId}/recordings/primary/fetch`,
    }),
    'task.failed': () => ({
      ...taskBase,
      error: { type: 'timeout', message: 'The task exceeded its maximum duration', root_cause: 'Navigation did not finish within 30 s' },
    }),
    'task.cancelled': () => ({ ...taskBase, execution_mode: 'deterministic' }),
    'task.healed': () => ({
      task_id: taskId,
      healed_task_version_id: randomUUID(),
      source_execution_id: executionId,
      run_id: randomUUID(),
      error_explanation: 'The login button selector changed',
      fix_suggestion: 'Select the button by its accessible name',
      confidence_score: 0.87,
      published_as_draft: true,
    }),
    'session.completed': () => ({
      session_id: sessionId,
      duration_ms: 93_000,
      proxy_bytes: 0,
      network_bytes_total: 1_482_113,
      steps: 14,
      screenshots: 2,
      domains: ['example.com'],
      session_dashboard_url: dashboard,
    }),
    'session.failed': () => ({
      session_id: sessionId,
      duration_ms: 41_000,
      reason: 'browser_unreachable',
      session_dashboard_url: dashboard,
    }),
    'session.recording.ready': () => ({
      session_id: sessionId,
      duration_ms: 93_000,
      size_bytes: 5_242_880,
      session_dashboard_url: dashboard,
    }),
    'intervention.requested': () => ({
      session_id: sessionId,
      request_id: randomUUID(),
      message: 'Please confirm the purchase',
      input_type: 'confirm',
      live_view_url: `${base}/live/${sessionId}`,
    }),
    'intervention.resolved': () => ({ session_id: sessionId, request_id: randomUUID() }),
    'batch.completed': () => ({
      batch_id: randomUUID(),
      total_requests: 10,
      completed_requests: 9,
      failed_requests: 1,
      status: 'completed',
    }),
    'batch.failed': () => ({
      batch_id: randomUUID(),
      total_requests: 10,
      completed_requests: 0,
      failed_requests: 10,
      status: 'failed',
    }),
    'identity.authenticated': () => ({
      identity_id: randomUUID(),
      application_id: randomUUID(),
      session_id: sessionId,
      execution_id: executionId,
    }),
    'identity.authentication_failed': () => ({
      identity_id: randomUUID(),
      application_id: randomUUID(),
      execution_id: executionId,
      failure_type: 'invalid_credentials',
      error_message: 'The password was rejected',
    }),
  };
  return (samples[type] as () => EventDataMap[T])();
}
