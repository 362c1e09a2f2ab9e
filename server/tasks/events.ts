// The data of task.completed, task.failed and task.cancelled, from an execution's row as
// its end recorded it: every field the contract lists (openapi.yaml, the task events), run_id only for v2 runs.
import type { EventDataMap } from '../outbox/types.js';
import type { ExecutionRow } from './queue-store.js';

type TaskEvent =
  | { type: 'task.completed'; data: EventDataMap['task.completed'] }
  | { type: 'task.failed'; data: EventDataMap['task.failed'] }
  | { type: 'task.cancelled'; data: EventDataMap['task.cancelled'] };

export interface EventExtras {
  artifacts: EventDataMap['task.completed']['artifacts'];
  recordingUrl?: string;
}

/** Runs execute their code as written: no agent chose their steps. */
export const EXECUTION_MODE = 'deterministic';

export function taskEvent(row: ExecutionRow, extras: EventExtras, publicUrl: string): TaskEvent {
  const base = {
    task_id: row.task_id,
    task_version_id: row.task_version_id,
    execution_id: row.id,
    ...(row.run_id ? { run_id: row.run_id } : {}),
    ...(row.session_id ? { session_id: row.session_id, session_dashboard_url: `${publicUrl}/v1/sessions/${row.session_id}` } : {}),
    duration_ms: row.duration_ms ?? 0,
    cost: { amount: Number(row.cost_credits), currency: 'credits' },
    artifacts: extras.artifacts,
    ...(extras.recordingUrl ? { recording_url: extras.recordingUrl } : {}),
  };
  switch (row.status) {
    case 'success':
      if (!base.session_id || !base.session_dashboard_url) throw new Error('a completed run has a session');
      return {
        type: 'task.completed',
        data: {
          ...base,
          session_id: base.session_id,
          session_dashboard_url: base.session_dashboard_url,
          execution_mode: EXECUTION_MODE,
          output: { value: row.output ?? {} },
        },
      };
    case 'cancelled':
      return { type: 'task.cancelled', data: { ...base, execution_mode: EXECUTION_MODE } };
    case 'failure':
    case 'timeout':
      return {
        type: 'task.failed',
        data: {
          ...base,
          error: {
            type: row.error_type ?? (row.status === 'timeout' ? 'timeout' : 'system_error'),
            message: row.error_message ?? 'The run failed',
            root_cause: row.root_cause ?? row.error_message ?? 'unknown',
          },
        },
      };
    default:
      throw new Error(`no event for a run that is ${row.status}`);
  }
}
