// How tasks, their versions, executions and runs are shown: the contract's shapes of the
// stores' rows. The handlers decide what to answer; these only say what a row looks like,
// the same for every operation that shows it.
import type { components } from '../../generated/types.js';
import { draftView } from './configuration.js';
import type * as queue from './queue-store.js';
import * as store from './store.js';

type Schemas = components['schemas'];

export const iso = (d: Date | string) => new Date(d).toISOString();
export const label = (v: store.VersionRow) => (v.version === null ? 'draft' : String(v.version));

export function versionView(v: store.VersionRow): Schemas['TaskVersion'] {
  return {
    id: v.id,
    taskId: v.task_id,
    version: label(v),
    code: v.code,
    deleted: v.deleted,
    createdAt: iso(v.created_at),
    updatedAt: iso(v.updated_at),
    language: v.language,
    description: v.description,
    browserConfiguration: v.browser_configuration ?? {},
  };
}

export function draftVersionView(v: store.VersionRow): Schemas['TaskDraftVersion'] {
  return { ...versionView(v), version: 'draft', browserConfiguration: draftView(v.browser_configuration ?? {}) };
}

export function metadataView(t: store.TaskRow, latest: store.VersionRow | undefined): Schemas['TaskMetadata'] {
  return {
    id: t.id,
    name: t.name,
    teamId: t.project_id,
    ...(t.description !== null ? { description: t.description } : {}),
    latest: latest ? label(latest) : 'draft',
    selfHealing: store.selfHealingOf(t.self_healing),
    deleted: false,
    createdAt: iso(t.created_at),
    updatedAt: iso(t.updated_at),
  };
}

export function taskView(t: store.TaskRow, shown: store.VersionRow | undefined): Schemas['Task'] {
  return {
    id: t.id,
    name: t.name,
    teamId: t.project_id,
    ...(t.description !== null ? { description: t.description } : {}),
    latestVersion: shown && shown.version !== null ? String(shown.version) : 'draft',
    code: shown?.code ?? '',
    language: shown?.language ?? 'typescript',
    browserConfiguration: shown?.browser_configuration ?? {},
    selfHealing: store.selfHealingOf(t.self_healing),
    deleted: false,
    createdAt: iso(t.created_at),
    updatedAt: iso(t.updated_at),
  };
}

export function executionView(e: queue.ExecutionRow): Schemas['TaskExecutionResult'] {
  return {
    id: e.id,
    taskVersionId: e.task_version_id,
    version: e.version_label,
    status: e.status,
    output: e.status === 'success' ? JSON.stringify(e.output ?? {}) : null,
    errorMessage: e.status === 'success' || e.status === 'queued' || e.status === 'running' ? null : e.error_message,
    startTime: iso(e.created_at),
    executionTime: e.duration_ms,
  };
}

export function runView(e: queue.ExecutionRow): Schemas['TaskRun'] {
  return {
    run_id: e.run_id ?? e.id,
    status: e.status,
    ...(e.status === 'success' ? { result: e.output ?? {} } : {}),
    ...((e.status === 'failure' || e.status === 'timeout') && e.error_message ? { error: e.error_message } : {}),
    ...(e.session_id ? { session_id: e.session_id } : {}),
  };
}

export const isTerminal = (s: queue.ExecutionStatus) => s !== 'queued' && s !== 'running';
