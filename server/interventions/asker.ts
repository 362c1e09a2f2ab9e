// The waiting side of an intervention: code in a session (an agent, a task run, an identity
// login) asks a person and waits for the answer. The request is a row and an
// `intervention.requested` event with a takeover link; the answer comes through the API or
// the live-view page (possibly on another node), so the asker polls the row. A request no one
// answers in time expires; one whose asker gives up (abort) or whose session ends is
// cancelled: either way the waiting code gets an InterventionError.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { emitEvent, type EmitSignals } from '../outbox/emit.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import * as store from './store.js';
import type { InputType } from './store.js';

/** How long a person has to answer when the asker does not say. */
export const DEFAULT_TIMEOUT_MS = 10 * 60_000;
/** How often a waiting asker looks for the answer (and a paused agent for its resume). */
const POLL_MS = 250;

export class InterventionError extends Error {
  constructor(
    readonly reason: 'expired' | 'cancelled',
    message: string,
  ) {
    super(message);
  }
}

export interface Question {
  message: string;
  inputType: InputType;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What code working in a session uses to ask a person, and to honour a pause. */
export interface Interventions {
  /** The person's answer: `yes` or `no` for confirm, the text or code, `done` after a takeover. */
  ask(session: { id: string; projectId: string }, q: Question): Promise<string>;
  /** Resolves once the session's agent is not paused (at once when it is not). */
  whilePaused(sessionId: string, signal?: AbortSignal): Promise<void>;
}

export interface AskerDeps {
  db: Db;
  secrets: Secrets;
  log: Logger;
  /** Told: intervention.requested written. */
  signals: EmitSignals;
  /** The takeover link for a session running on this node; undefined when it is not. */
  takeoverUrl(sessionId: string): string | undefined;
  /** The session's own live-view link, when no takeover link can be made. */
  liveViewUrl(sessionId: string): Promise<string | undefined>;
}

/** The sealing context of an answer: it opens only for its own request. */
export const answerContext = (id: string) => `intervention:${id}:answer`;

export function interventions(d: AskerDeps): Interventions {
  return {
    async ask(session, q) {
      const id = randomUUID();
      const link = d.takeoverUrl(session.id) ?? (await d.liveViewUrl(session.id));
      if (!link) throw new InterventionError('cancelled', 'The session is not running: no one can be asked');
      const timeoutMs = q.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      await d.db.transaction(async (tx) => {
        await store.insertRequest(tx, {
          id,
          projectId: session.projectId,
          sessionId: session.id,
          message: q.message,
          inputType: q.inputType,
          liveViewUrl: link,
          expiresAt: new Date(Date.now() + timeoutMs),
        });
        await emitEvent(tx, d.signals, session.projectId, 'intervention.requested', {
          session_id: session.id,
          request_id: id,
          message: q.message,
          input_type: q.inputType,
          live_view_url: link,
        });
      });
      d.log.info({ sessionId: session.id, requestId: id, inputType: q.inputType }, 'intervention requested');
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const row = await store.stateOf(d.db, id);
        if (row?.status === 'resolved') return d.secrets.open(row.answer ?? '', answerContext(id));
        if (!row || row.status === 'cancelled') throw new InterventionError('cancelled', 'The request for a person was cancelled: the session ended');
        if (row.status === 'expired')
          throw new InterventionError('expired', `No one answered the request for a person within ${Math.round(timeoutMs / 1000)} s`);
        if (q.signal?.aborted || Date.now() >= deadline) {
          const reason = q.signal?.aborted ? 'cancelled' : 'expired';
          // Answered just now: the answer wins.
          if (await store.finish(d.db, id, reason)) {
            d.log.info({ sessionId: session.id, requestId: id, reason }, 'intervention ended unanswered');
            throw new InterventionError(
              reason,
              reason === 'expired'
                ? `No one answered the request for a person within ${Math.round(timeoutMs / 1000)} s`
                : 'The request for a person was withdrawn',
            );
          }
          continue;
        }
        await sleep(Math.min(POLL_MS, Math.max(1, deadline - Date.now())));
      }
    },

    async whilePaused(sessionId, signal) {
      while (await store.isPaused(d.db, sessionId)) {
        signal?.throwIfAborted();
        await sleep(POLL_MS, undefined, signal ? { signal } : undefined);
      }
    },
  };
}
