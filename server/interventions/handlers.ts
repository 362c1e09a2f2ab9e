// The Agent operations of the contract that concern a person: the session's pending
// requests, answering one, and pausing and resuming the agent.
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import { emitEvent, type EmitSignals } from '../outbox/emit.js';
import type { Secrets } from '../secrets/index.js';
import type { SessionLookup } from '../sessions/index.js';
import type { Db } from '../store/db.js';
import { answerContext } from './asker.js';
import * as store from './store.js';

export type InterventionOperation = 'listRequestedHumanInterventions' | 'respondToHumanIntervention' | 'pauseAgent' | 'resumeAgent';

export interface AnswerDeps {
  db: Db;
  secrets: Secrets;
  /** Told: intervention.resolved written. */
  signals: EmitSignals;
}

/** Checks an answer against its request's input type; the message when it does not fit. */
export function answerProblem(inputType: store.InputType, response: string): string | undefined {
  if (inputType === 'confirm' && response !== 'yes' && response !== 'no') return 'A confirm request is answered `yes` or `no`';
  if ((inputType === 'text' || inputType === 'otp') && response.trim() === '') return 'The answer is empty';
  return undefined;
}

/**
 * Answers a pending request of a session (from the API or the live-view page): the answer
 * sealed into its row, `intervention.resolved` (without the answer) in the same
 * transaction. False when the session has no pending request with that id.
 */
export async function answer(
  d: AnswerDeps,
  projectId: string,
  sessionId: string,
  requestId: string,
  response: string,
): Promise<{ ok: true } | { ok: false; status: 400 | 404; message: string }> {
  const pending = (await store.pendingOf(d.db, projectId, sessionId)).find((r) => r.id === requestId);
  if (!pending) return { ok: false, status: 404, message: 'No pending request with this id' };
  const problem = answerProblem(pending.input_type, response);
  if (problem) return { ok: false, status: 400, message: problem };
  const done = await d.db.transaction(async (tx) => {
    if (!(await store.resolve(tx, projectId, sessionId, requestId, d.secrets.seal(response, answerContext(requestId))))) return false;
    await emitEvent(tx, d.signals, projectId, 'intervention.resolved', { session_id: sessionId, request_id: requestId });
    return true;
  });
  return done ? { ok: true } : { ok: false, status: 404, message: 'No pending request with this id' };
}

export function interventionHandlers(d: AnswerDeps & { sessions: SessionLookup }): Pick<AppHandlers, InterventionOperation> {
  /** The running session, or the contract's answer: 404 unknown, 400 not running. */
  const running = async (projectId: string, id: string) => {
    const s = await d.sessions.lookup(projectId, id);
    if ('status' in s) return s.status === 404 ? fail(404, s.message) : fail(400, 'Session is not running');
    return s;
  };
  return {
    async listRequestedHumanInterventions(req, ctx) {
      const s = await running(ctx.projectId, req.params.session_id);
      if ('body' in s) return s;
      const rows = await store.pendingOf(d.db, ctx.projectId, s.id);
      const requests = rows.map((r) => ({
        request_id: r.id,
        message: r.message,
        input_type: r.input_type,
        live_view_url: r.live_view_url,
        created_at: r.created_at.toISOString(),
      }));
      return { status: 200, body: { data: { requests } } };
    },

    async respondToHumanIntervention(req, ctx) {
      const s = await running(ctx.projectId, req.params.session_id);
      if ('body' in s) return s;
      const result = await answer(d, ctx.projectId, s.id, req.body.requestId, req.body.response);
      if (!result.ok) return fail(result.status, result.message);
      return { status: 200, body: { data: { status: 'resolved' } } };
    },

    async pauseAgent(req, ctx) {
      const s = await running(ctx.projectId, req.params.session_id);
      if ('body' in s) return s;
      await store.setPaused(d.db, ctx.projectId, s.id, true);
      return { status: 200, body: { data: { status: 'paused' } } };
    },

    async resumeAgent(req, ctx) {
      const s = await running(ctx.projectId, req.params.session_id);
      if ('body' in s) return s;
      await store.setPaused(d.db, ctx.projectId, s.id, false);
      return { status: 200, body: { data: { status: 'resumed' } } };
    },
  };
}
