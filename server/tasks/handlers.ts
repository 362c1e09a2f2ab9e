// The Tasks operations of the contract: the legacy /v1/task family (tasks, the draft,
// numbered versions, executions, legacy runs) and the /v2 runs (run, status, cancel). Each
// reads its request and shapes its answer (views.ts); runs are submitted through
// run-submission.ts and executed by the worker (worker.ts, run.ts).
import { randomUUID } from 'node:crypto';
import type { EmitSignals } from '../outbox/emit.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import { checkConfiguration as checkSessionConfiguration, decodeCode } from './configuration.js';
import { taskEvent } from './events.js';
import * as queue from './queue-store.js';
import { runSubmission, type RunSubmissionOptions } from './run-submission.js';
import * as store from './store.js';
import { draftVersionView, executionView, isTerminal, iso, label, metadataView, runView, taskView, versionView } from './views.js';
import type { TaskWorker } from './worker.js';

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

export interface TaskHandlerOptions extends RunSubmissionOptions {
  worker: Pick<TaskWorker, 'reserve' | 'abort' | 'waitLocal'>;
  /** Told: a cancelled run's event written. */
  signals: EmitSignals;
}

/** How long a cancel waits for the running run to stop before it answers. */
const CANCEL_WAIT_MS = 15_000;

export function taskHandlers({ db, config, sessions, worker, signals }: TaskHandlerOptions): TaskHandlers {
  const { waitForEnd, queueRun, versionOf, legacyRun } = runSubmission({ db, config, sessions, worker });

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
