// POST /v1/tools/perform-web-task and its status path. The request is checked whole before
// anything starts (the model, the options this server offers, the output_schema, the URL);
// then the run is awaited (sync) or recorded in web_tasks and answered with its id (async).
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import { languageModel } from '../llm/index.js';
import type { Db } from '../store/db.js';
import { compileAnswerSchema } from './answer-schema.js';
import { onlyUrlIn } from './prompt-url.js';
import { StartError, type RunResult, type WebTaskRunner, type WebTaskSpec } from './runner.js';
import type { AgentStepStream } from './step-stream.js';
import { getWebTask, insertRunning, recordEnd, recordProgress } from './store.js';

export type AgentHandlers = Pick<AppHandlers, 'performWebTask' | 'getPerformWebTaskStatus' | 'streamAgentSteps'>;

/** The one agent this server runs (the vendor's default name for a DOM-driven agent). */
const AGENT = 'browser-use';
const DEFAULT_MAX_STEPS = 200;

export function agentHandlers(d: { db: Db; config: ServiceConfig; log: Logger; runner: WebTaskRunner; steps: Pick<AgentStepStream, 'admit'> }): {
  handlers: AgentHandlers;
  /** Resolves when every async run has recorded its end. */
  settled(): Promise<void>;
} {
  const { config } = d;
  /** Async runs in flight: the shutdown waits for their end to be recorded. */
  const inFlight = new Set<Promise<void>>();

  const answerOf = (r: Extract<RunResult, { ok: true }>) => ({ result: r.answer, steps: r.steps, session_id: r.sessionId });

  const handlers: AgentHandlers = {
    async performWebTask(req, ctx) {
      const b = req.body;
      const llm = config.llm;
      if (!llm) return fail(503, 'No LLM provider is configured');
      if (b.agent !== undefined && b.agent !== AGENT) return fail(400, `agent ${b.agent} is not offered by this server; it runs ${AGENT}`);
      if (b.provider !== undefined && b.provider !== llm.provider) {
        return fail(400, `provider ${b.provider} is not offered by this server; its model is ${llm.provider}'s`);
      }
      const answerSchema = b.output_schema ? compileAnswerSchema(b.output_schema) : undefined;
      if (answerSchema && 'error' in answerSchema) return fail(400, answerSchema.error);
      const timeLimitS = Math.min(b.time_limit_seconds ?? config.webTaskTimeoutSeconds, config.webTaskTimeoutSeconds);
      if (b.directlyOpenUrl !== undefined && b.directly_open_url !== undefined && b.directlyOpenUrl !== b.directly_open_url) {
        return fail(400, 'directlyOpenUrl and directly_open_url are the same option and disagree: give one');
      }
      const url = b.url ?? ((b.directlyOpenUrl ?? b.directly_open_url) ? onlyUrlIn(b.prompt) : undefined);
      if (url) {
        try {
          await d.runner.checkStartUrl(url);
        } catch (err) {
          if (err instanceof StartError) return fail(err.status as 400 | 403, err.message);
          throw err;
        }
      }
      const spec: WebTaskSpec = {
        projectId: ctx.projectId,
        apiKeyId: ctx.apiKeyId,
        prompt: b.prompt,
        url,
        sessionId: req.query.sessionId,
        model: languageModel(llm, { timeoutMs: config.llmTimeoutSeconds * 1000, model: b.model }),
        answerSchema,
        maxSteps: b.max_steps ?? DEFAULT_MAX_STEPS,
        timeLimitMs: timeLimitS * 1000,
        secrets: b.secret_values ?? {},
        highlight: b.highlight_elements ?? false,
        humanIntervention: b.human_intervention ?? false,
      };

      if (!b.async) {
        const r = await d.runner.run(spec);
        if (r.ok) return { status: 200, body: { data: { result: answerOf(r) } } };
        if (r.kind === 'start') {
          const answer = fail(r.error.status, r.error.message);
          return r.error.retryAfterSeconds === undefined ? answer : { ...answer, headers: { 'Retry-After': String(r.error.retryAfterSeconds) } };
        }
        return fail(r.kind === 'model' ? 502 : 422, r.error);
      }

      const id = `perform-web-task-${randomUUID()}`;
      // The row's deadline outlives the run's own limit: past it, the row lost its server.
      await insertRunning(d.db, { id, projectId: ctx.projectId, deadline: new Date(Date.now() + timeLimitS * 1000 + 60_000) });
      const log = ctx.log.child({ workflowId: id });
      // Progress writes in order, one at a time; the end waits for the last.
      let progress = Promise.resolve();
      const done = (async () => {
        const r = await d.runner.run({
          ...spec,
          onSession: (sessionId) => void (progress = progress.then(() => recordProgress(d.db, id, { sessionId, steps: [] }).catch(() => {}))),
          onStep: (steps) => void (progress = progress.then(() => recordProgress(d.db, id, { steps: [...steps] }).catch(() => {}))),
        });
        await progress;
        if (r.ok) await recordEnd(d.db, id, { status: 'COMPLETED', result: answerOf(r), steps: r.steps });
        else await recordEnd(d.db, id, { status: 'FAILED', error: r.kind === 'start' ? r.error.message : r.error, steps: r.steps });
      })().catch((err) => log.error({ err }, 'web task failed unexpectedly'));
      inFlight.add(done);
      void done.finally(() => inFlight.delete(done));
      return { status: 200, body: { data: { status: 'running', workflow_id: id } } };
    },

    // /ws without an upgrade: the same checks as the upgrade's, then where to connect.
    async streamAgentSteps(req) {
      const a = await d.steps.admit(req.query.sessionId, (n) => req.headers.get(n) ?? undefined, req.query.apiKey ?? null);
      if (!a.ok) return fail(a.status, a.message);
      return fail(426, 'Connect with a WebSocket client (Upgrade: websocket)');
    },

    async getPerformWebTaskStatus(req, ctx) {
      const row = await getWebTask(d.db, ctx.projectId, req.params.workflowId);
      if (!row) return fail(404, 'Web task not found');
      if (row.status === 'RUNNING') return { status: 200, body: { data: { status: 'RUNNING', steps: row.steps } } };
      if (row.status === 'COMPLETED') return { status: 200, body: { data: { status: 'COMPLETED', result: row.result ?? {} } } };
      return { status: 200, body: { data: { status: 'FAILED', error: row.error ?? 'The web task failed', steps: row.steps } } };
    },
  };
  return { handlers, settled: async () => void (await Promise.all(inFlight)) };
}
