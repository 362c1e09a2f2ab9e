// The Tasks operations of the contract: the legacy /v1/task family (tasks, the draft,
// numbered versions, executions, legacy runs) and the /v2 runs (run, status, cancel). Runs
// are queued here and executed by the worker (worker.ts, run.ts).
import { randomUUID } from 'node:crypto';
import type { EmitSignals } from '../outbox/emit.js';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { components } from '../../generated/types.js';
import { refuseUnpaid } from '../credits/account.js';
import type { SessionCreateBody } from '../sessions/index.js';
import { checkConfiguration as checkSessionConfiguration, decodeCode, draftView, sessionBody } from './configuration.js';
import { taskEvent } from './events.js';
import * as queue from './queue-store.js';
import * as store from './store.js';
import type { TaskWorker } from './worker.js';

type Schemas = components['schemas'];

export type TaskOperation =
  | 'createTask'
  | 'listTasks'
  | 'getTask'
  | 'updateTask'
  | 'deleteTask'
  | 'getTaskDraft'
  | 'saveTaskDraft'
  | 'deployTask'
  | 'listTaskVersions'
  | 'getLatestTaskVersion'
  | 'getTaskVersion'
  | 'publishTaskVersion'
  | 'deleteTaskVersion'
  | 'listTaskExecutions'
  | 'getTaskExecution'
  | 'executeTask'
  | 'executeTaskByName'
  | 'runTask'
  | 'getTaskRunStatus'
  | 'cancelTaskRun';
export type TaskHandlers = Pick<AppHandlers, TaskOperation>;

export interface TaskHandlerOptions {
  db: Db;
  config: ServiceConfig;
  /** What the handlers need of the SessionManager: the checks a session creation makes. */
  sessions: { validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> };
  worker: Pick<TaskWorker, 'reserve' | 'abort' | 'waitLocal'>;
  /** Told: a cancelled run's event written. */
  signals: EmitSignals;
}

/** How long a cancel waits for the running run to stop before it answers. */
const CANCEL_WAIT_MS = 15_000;

const iso = (d: Date | string) => new Date(d).toISOString();
const label = (v: store.VersionRow) => (v.version === null ? 'draft' : String(v.version));

function versionView(v: store.VersionRow): Schemas['TaskVersion'] {
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

function draftVersionView(v: store.VersionRow): Schemas['TaskDraftVersion'] {
  return { ...versionView(v), version: 'draft', browserConfiguration: draftView(v.browser_configuration ?? {}) };
}

function metadataView(t: store.TaskRow, latest: store.VersionRow | undefined): Schemas['TaskMetadata'] {
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

function taskView(t: store.TaskRow, shown: store.VersionRow | undefined): Schemas['Task'] {
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

function executionView(e: queue.ExecutionRow): Schemas['TaskExecutionResult'] {
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

function runView(e: queue.ExecutionRow): Schemas['TaskRun'] {
  return {
    run_id: e.run_id ?? e.id,
    status: e.status,
    ...(e.status === 'success' ? { result: e.output ?? {} } : {}),
    ...((e.status === 'failure' || e.status === 'timeout') && e.error_message ? { error: e.error_message } : {}),
    ...(e.session_id ? { session_id: e.session_id } : {}),
  };
}

const isTerminal = (s: queue.ExecutionStatus) => s !== 'queued' && s !== 'running';

export function taskHandlers({ db, config, sessions, worker, signals }: TaskHandlerOptions): TaskHandlers {
  /**
   * The fields of a draft or version, checked beyond the schema: the code decodes to UTF-8
   * TypeScript that parses, and the configuration is one a session can have.
   */
  async function checkFields(
    projectId: string,
    f: { code: string; language?: 'typescript'; description?: string; browserConfiguration?: store.BrowserConfiguration },
  ) {
    const decoded = decodeCode(f.code);
    if (!decoded.ok) return { refused: decoded.message };
    const configuration = f.browserConfiguration ?? {};
    const refused = await checkConfiguration(projectId, configuration);
    if (refused) return { refused };
    return {
      fields: {
        code: f.code,
        language: f.language ?? 'typescript',
        description: f.description ?? null,
        browserConfiguration: configuration,
      } satisfies store.VersionFields,
    };
  }

  const checkConfiguration = (projectId: string, configuration: store.BrowserConfiguration) => checkSessionConfiguration(sessions, projectId, configuration);

  /** Polls the run until it ends (the worker wakes us at once when it ends on this node). */
  async function waitForEnd(projectId: string, id: string, timeoutMs: number): Promise<queue.ExecutionRow> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = (await queue.getExecution(db, projectId, id))!;
      if (isTerminal(row.status) || Date.now() >= deadline) return row;
      await worker.waitLocal(id, Math.min(1_000, Math.max(1, deadline - Date.now())));
    }
  }

  /** Queues a run of `version`; 404/409/400 answers as the run operations document them. */
  async function queueRun(
    ctx: { projectId: string; apiKeyId: string },
    task: store.TaskRow,
    version: store.VersionRow,
    o: {
      runId?: string;
      input: Record<string, string>;
      sessionId?: string;
      cleanup: boolean;
      identityId?: string;
      identitySkipValidation?: boolean;
      configuration?: store.BrowserConfiguration;
    },
  ) {
    const configuration = o.configuration ?? version.browser_configuration ?? {};
    if (o.configuration) {
      const refused = await checkConfiguration(ctx.projectId, configuration);
      if (refused) return fail(400, refused);
    }
    if (o.sessionId) {
      const s = await queue.sessionFacts(db, o.sessionId);
      const [owned] = await db.query('SELECT 1 FROM sessions WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL', [o.sessionId, ctx.projectId]);
      if (!s || !owned) return fail(404, 'Session not found');
      if (s.status !== 'running') return fail(409, 'Session is not running');
    }
    if (o.identityId && !o.sessionId) {
      // The identity is checked as the session's creation will check it, so a run is not
      // queued that can only fail.
      const refused = await sessions.validate(
        ctx.projectId,
        sessionBody(configuration, { id: o.identityId, skipValidation: o.identitySkipValidation ?? false }),
      );
      if (refused) return /identit/i.test(refused) ? fail(404, refused) : fail(400, `browserConfiguration: ${refused}`);
    }
    const unpaid = await refuseUnpaid(db, ctx.projectId, config);
    if (unpaid) return fail(402, unpaid);
    // Room here and nothing queued: the run is this node's from its insert.
    const slot = worker.reserve();
    const row = await queue
      .enqueue(
        db,
        {
          projectId: ctx.projectId,
          apiKeyId: ctx.apiKeyId,
          taskId: task.id,
          versionId: version.id,
          versionLabel: label(version),
          runId: o.runId,
          input: o.input,
          browserConfiguration: configuration,
          sessionId: o.sessionId,
          cleanupSessions: o.cleanup,
          identityId: o.identityId,
          identitySkipValidation: o.identitySkipValidation,
        },
        slot?.nodeId,
      )
      .catch((err: unknown) => {
        slot?.giveBack();
        throw err;
      });
    if (slot && row.status === 'running') slot.take({ ...row, version_code: version.code });
    else slot?.giveBack();
    return row;
  }

  const versionOf = (task: store.TaskRow, v: string) => store.getVersion(db, task, v === 'latest' || v === 'draft' ? v : Number(v));

  async function legacyRun(
    ctx: { projectId: string; apiKeyId: string },
    task: store.TaskRow,
    b: {
      version?: string;
      sessionId?: string;
      async?: boolean;
      overrideBrowserConfiguration?: store.BrowserConfiguration;
      inputs?: Record<string, string>;
      cleanupSessions?: boolean;
    },
  ) {
    const version = await versionOf(task, b.version ?? 'latest');
    if (!version) return fail(404, b.version && b.version !== 'latest' ? `Task version ${b.version} not found` : 'The task has no deployed version');
    const row = await queueRun(ctx, task, version, {
      input: b.inputs ?? {},
      sessionId: b.sessionId,
      cleanup: b.cleanupSessions ?? true,
      configuration: b.overrideBrowserConfiguration,
    });
    if ('status' in row && typeof row.status === 'number') return row;
    const queued = row as queue.ExecutionRow;
    if (b.async) {
      return {
        status: 200 as const,
        body: { data: { success: true, async: true, message: 'Task execution started', taskId: task.id, executionResultId: queued.id } },
      };
    }
    const e = await waitForEnd(ctx.projectId, queued.id, Number.MAX_SAFE_INTEGER);
    return {
      status: 200 as const,
      body: {
        data: {
          success: e.status === 'success',
          async: false,
          message: e.status === 'success' ? 'Task executed successfully' : `Task execution ended: ${e.status}`,
          taskId: task.id,
          executionTime: e.duration_ms ?? 0,
          ...(e.status === 'success' ? { output: JSON.stringify(e.output ?? {}) } : { error: e.error_message ?? e.status }),
          executionResultId: e.id,
        },
      },
    };
  }

  return {
    async createTask(req, ctx) {
      const b = req.body;
      let draft: store.VersionFields | undefined;
      if (b.code !== undefined) {
        const checked = await checkFields(ctx.projectId, { ...b, code: b.code });
        if ('refused' in checked) return fail(400, checked.refused!);
        draft = checked.fields;
      } else if (b.browserConfiguration) {
        // The configuration belongs to a version; without code there is none to keep it in.
        return fail(400, 'browserConfiguration needs code: it is saved with the draft, which code makes');
      }
      const task = await store.createTask(db, {
        projectId: ctx.projectId,
        name: b.name,
        description: b.description ?? null,
        selfHealing: b.selfHealing,
        draft,
      });
      if (task === 'name_taken') return fail(409, `A task named ${b.name} already exists`);
      const shown = await store.getVersion(db, task, 'draft');
      return { status: 200, body: { data: taskView(task, shown) } };
    },

    async listTasks(req, ctx) {
      const { page = 1, limit = 10 } = req.query;
      const { rows, total } = await store.listTasks(db, ctx.projectId, page, limit);
      const latest = await store.latestVersions(
        db,
        rows.map((t) => t.id),
      );
      const tasks = await Promise.all(rows.map(async (t) => taskView(t, latest.get(t.id) ?? (await store.getVersion(db, t, 'draft')))));
      return { status: 200, body: { data: { tasks, total, page, limit } } };
    },

    async getTask(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      return { status: 200, body: { data: metadataView(task, await store.getVersion(db, task, 'latest')) } };
    },

    async updateTask(req, ctx) {
      const task = await store.updateTask(db, ctx.projectId, req.params.taskId, req.body);
      if (task === 'name_taken') return fail(409, `A task named ${req.body.name} already exists`);
      if (!task) return fail(404, 'Task not found');
      return { status: 200, body: { data: metadataView(task, await store.getVersion(db, task, 'latest')) } };
    },

    async deleteTask(req, ctx) {
      if (!(await store.deleteTask(db, ctx.projectId, req.params.taskId))) return fail(404, 'Task not found');
      return { status: 200, body: { data: { success: true, message: 'Task deleted successfully' } } };
    },

    async getTaskDraft(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const draft = await store.getVersion(db, task, 'draft');
      if (!draft) return fail(404, 'The task has no draft');
      return { status: 200, body: { data: draftVersionView(draft) } };
    },

    async saveTaskDraft(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const checked = await checkFields(ctx.projectId, req.body);
      if ('refused' in checked) return fail(400, checked.refused!);
      return { status: 200, body: { data: draftVersionView(await store.saveDraft(db, task, checked.fields)) } };
    },

    async deployTask(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const b = req.body ?? {};
      let base = b;
      if (b.code === undefined) {
        const draft = await store.getVersion(db, task, 'draft');
        if (!draft) return fail(400, 'code is required: the task has no draft');
        base = {
          code: draft.code,
          language: b.language ?? draft.language,
          description: b.description ?? draft.description ?? undefined,
          browserConfiguration: b.browserConfiguration ?? draft.browser_configuration,
        };
      }
      const checked = await checkFields(ctx.projectId, { ...base, code: base.code! });
      if ('refused' in checked) return fail(400, checked.refused!);
      return { status: 200, body: { data: versionView(await store.deploy(db, task, checked.fields)) } };
    },

    async listTaskVersions(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const versions = (await store.listVersions(db, task)).map((v) => ({
        version: label(v),
        ...(v.description !== null ? { description: v.description } : {}),
        createdAt: iso(v.created_at),
        updatedAt: iso(v.updated_at),
      }));
      return { status: 200, body: { data: { taskId: task.id, versions } } };
    },

    async getLatestTaskVersion(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const v = await store.getVersion(db, task, 'latest');
      if (!v) return fail(404, 'The task has no deployed version');
      return { status: 200, body: { data: versionView(v) } };
    },

    async getTaskVersion(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const v = await versionOf(task, req.params.taskVersion);
      if (!v) return fail(404, `Task version ${req.params.taskVersion} not found`);
      return { status: 200, body: { data: versionView(v) } };
    },

    async publishTaskVersion(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const b = req.body;
      if (b.code !== undefined) {
        const decoded = decodeCode(b.code);
        if (!decoded.ok) return fail(400, decoded.message);
      }
      if (b.browserConfiguration) {
        const refused = await checkConfiguration(ctx.projectId, b.browserConfiguration);
        if (refused) return fail(400, refused);
      }
      const v = await store.publish(db, task, Number(req.params.taskVersion), {
        code: b.code,
        language: b.language,
        description: b.description,
        browserConfiguration: b.browserConfiguration,
      });
      if (v === 'no_code') return fail(400, 'code is required for a new version');
      if (v === 'deleted') return fail(404, `Task version ${req.params.taskVersion} was deleted`);
      if (v === 'out_of_range') return fail(400, `taskVersion must be at most ${store.MAX_VERSION}`);
      return { status: 200, body: { data: versionView(v) } };
    },

    async deleteTaskVersion(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const v = await versionOf(task, req.params.taskVersion);
      if (!v) return fail(404, `Task version ${req.params.taskVersion} not found`);
      await store.deleteVersion(db, v);
      return { status: 200, body: { data: { success: true, message: 'Task version deleted successfully' } } };
    },

    async listTaskExecutions(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const { page = 1, limit = 10, status, version } = req.query;
      const { rows, total } = await queue.listExecutions(db, ctx.projectId, task.id, { page, limit, status, version });
      return {
        status: 200,
        body: { data: { results: rows.map(executionView), pagination: { page, limit, total, totalPages: Math.ceil(total / limit) } } },
      };
    },

    async getTaskExecution(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const e = await queue.getExecution(db, ctx.projectId, req.params.executionId);
      if (!e || e.task_id !== task.id) return fail(404, 'Execution not found');
      return { status: 200, body: { data: executionView(e) } };
    },

    async executeTask(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.body.taskId);
      if (!task) return fail(404, 'Task not found');
      return legacyRun(ctx, task, req.body);
    },

    async executeTaskByName(req, ctx) {
      const task = await store.getTaskByName(db, ctx.projectId, req.params.taskName);
      if (!task) return fail(404, 'Task not found');
      return legacyRun(ctx, task, { ...req.body, version: 'latest' });
    },

    async runTask(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const b = req.body;
      const version = b.version_id ? await store.getVersionById(db, task, b.version_id) : await versionOf(task, b.version ?? 'latest');
      if (!version) {
        const which = b.version_id ?? b.version ?? 'latest';
        return fail(404, which === 'latest' ? 'The task has no deployed version' : `Task version ${which} not found`);
      }
      const row = await queueRun(ctx, task, version, {
        runId: randomUUID(),
        input: b.input_params,
        sessionId: b.session_id,
        cleanup: b.cleanup_sessions ?? true,
        identityId: b.identity_id,
        identitySkipValidation: b.identity_skip_validation,
      });
      if ('status' in row && typeof row.status === 'number') return row;
      const queued = row as queue.ExecutionRow;
      const shown = b.sync ? await waitForEnd(ctx.projectId, queued.id, Number.MAX_SAFE_INTEGER) : queued;
      return { status: 200, body: runView(shown) };
    },

    async getTaskRunStatus(req, ctx) {
      const run = await queue.getRun(db, ctx.projectId, req.params.runId);
      if (!run) return fail(404, 'Task run not found');
      return { status: 200, body: runView(run) };
    },

    async cancelTaskRun(req, ctx) {
      const run = await queue.getRun(db, ctx.projectId, req.params.runId);
      if (!run) return fail(404, 'Task run not found');
      const result = await queue.cancel(db, signals, run, (r) => {
        const e = taskEvent(r, { artifacts: [] }, config.publicUrl);
        if (e.type !== 'task.cancelled') throw new Error('a cancelled run has a task.cancelled event');
        return e.data;
      });
      if (result.outcome === 'ended') return fail(409, `Task run has already ended (${result.row.status})`);
      if (result.outcome === 'requested') {
        // Running: stopped here at once when it runs on this node, else by its node's worker
        // at its next tick. The answer waits for the stop.
        worker.abort(run.id, 'cancel');
        const ended = await waitForEnd(ctx.projectId, run.id, CANCEL_WAIT_MS);
        if (isTerminal(ended.status) && ended.status !== 'cancelled') return fail(409, `Task run has already ended (${ended.status})`);
        return { status: 200, body: { ...runView(ended), status: 'cancelled' } };
      }
      return { status: 200, body: runView(result.row) };
    },
  };
}
