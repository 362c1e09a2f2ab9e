// Run submission: a run of a task's version checked (its session, identity, configuration
// and the project's credits) and queued, taken at once by this node's worker when it has
// room, and, for a caller that waits, followed to its end. The legacy /v1 executions and
// the /v2 runs both submit here; their handlers only read their requests and shape answers.
import type { ServiceConfig } from '../config/config.js';
import { refuseUnpaid } from '../credits/account.js';
import { fail } from '../http/errors.js';
import type { Db } from '../store/db.js';
import type { SessionCreateBody } from '../sessions/index.js';
import { checkConfiguration, sessionBody } from './configuration.js';
import * as queue from './queue-store.js';
import * as store from './store.js';
import { isTerminal, label } from './views.js';
import type { TaskWorker } from './worker.js';

export interface RunSubmissionOptions {
  db: Db;
  config: ServiceConfig;
  /** What submission needs of the SessionManager: the checks a session creation makes. */
  sessions: { validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> };
  worker: Pick<TaskWorker, 'reserve' | 'waitLocal'>;
}

export type RunSubmission = ReturnType<typeof runSubmission>;

export function runSubmission({ db, config, sessions, worker }: RunSubmissionOptions) {
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
      const refused = await checkConfiguration(sessions, ctx.projectId, configuration);
      if (refused) return fail(400, refused);
    }
    if (o.sessionId) {
      const s = await queue.sessionFacts(db, o.sessionId);
      const owned = await queue.isSessionOfProject(db, o.sessionId, ctx.projectId);
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

  return { waitForEnd, queueRun, versionOf, legacyRun };
}
