// One perform-web-task from start to end: the session (the one named, or a temporary one
// started for it and always ended), Playwright on its browser, the agent loop under its
// time limit, the charge for its steps. The runner also ends what runs when a session
// ends under it or the server shuts down.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { RunningSession } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { charge } from '../credits/ledger.js';
import { roundCredits } from '../credits/prices.js';
import type { LanguageModel } from '../llm/index.js';
import { assertPublicUrl, UrlPolicyError } from '../net/address-policy.js';
import type { Interventions, InputType } from '../interventions/index.js';
import type { SessionLifecycle, SessionLookup } from '../sessions/index.js';
import type { Db } from '../store/db.js';
import { ActionError } from './actions.js';
import { CdpRelay } from './cdp-relay.js';
import { agentFileAccess } from './files.js';
import type { AnswerSchema } from './answer-schema.js';
import { runWebTask, TimeLimit, type WebTaskOutcome } from './loop.js';
import type { StepSink } from './step-stream.js';
import type { StepRecord } from './steps.js';

export interface WebTaskSpec {
  projectId: string;
  apiKeyId: string;
  prompt: string;
  url: string | undefined;
  sessionId: string | undefined;
  model: LanguageModel;
  answerSchema: AnswerSchema | undefined;
  maxSteps: number;
  timeLimitMs: number;
  secrets: Record<string, string>;
  highlight: boolean;
  /** human_intervention: the agent may ask a person (interventions/) when it is stuck. */
  humanIntervention: boolean;
  onStep?(steps: readonly StepRecord[], sessionId: string): void;
  onSession?(sessionId: string): void;
}

/** Why a web task could not start: the HTTP status and message to answer. */
export class StartError extends Error {
  constructor(
    readonly status: 400 | 402 | 403 | 404 | 409 | 429 | 500 | 503,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export type RunResult = (WebTaskOutcome & { sessionId: string }) | { ok: false; kind: 'start'; error: StartError; steps: StepRecord[] };

const CONNECT_TIMEOUT_MS = 15_000;
const KEEP_ALIVE_MS = 5_000;

export class WebTaskRunner {
  /** Runs in flight, by id: a session's end or the shutdown aborts them. */
  private readonly running = new Map<string, { sessionId?: string; abort: AbortController }>();
  private readonly relay = new CdpRelay();

  constructor(
    private readonly d: {
      db: Db;
      config: ServiceConfig;
      log: Logger;
      sessions: SessionLookup & SessionLifecycle;
      interventions: Interventions;
      /** Told each step, for the clients following the session's agent (GET /ws). */
      steps: StepSink;
    },
  ) {}

  /** Refuses a URL the server may not load for users. Throws StartError (403/400). */
  async checkStartUrl(url: string): Promise<void> {
    try {
      await assertPublicUrl(url, { allowPrivate: this.d.config.allowPrivateNetworks });
    } catch (err) {
      if (err instanceof UrlPolicyError) throw new StartError(err.reason === 'private_address' ? 403 : 400, err.message);
      throw err;
    }
  }

  async run(spec: WebTaskSpec): Promise<RunResult> {
    const id = randomUUID();
    const abort = new AbortController();
    const entry: { sessionId?: string; abort: AbortController } = { abort };
    this.running.set(id, entry);
    const timer = setTimeout(() => abort.abort(new TimeLimit(`The web task ran out of time (${Math.round(spec.timeLimitMs / 1000)} s)`)), spec.timeLimitMs);
    let temporary: string | undefined;
    let browser: Browser | undefined;
    let steps: StepRecord[] = [];
    let keepAlive: NodeJS.Timeout | undefined;
    let streaming: string | undefined;
    try {
      let session: RunningSession;
      try {
        if (spec.url) await this.checkStartUrl(spec.url);
        ({ session, temporary } = await this.session(spec, entry));
      } catch (err) {
        if (err instanceof StartError) return { ok: false, kind: 'start', error: err, steps };
        throw err;
      }
      spec.onSession?.(session.id);
      streaming = session.id;
      this.d.steps.begin(session.id);
      // A task at work is activity, model turns included: the idle timeout waits for it.
      keepAlive = setInterval(() => this.d.sessions.touch(session.id, 'input'), KEEP_ALIVE_MS);
      const relayed = await this.relay.url(session.browser.wsEndpoint);
      try {
        browser = await chromium.connectOverCDP(relayed.url, { timeout: CONNECT_TIMEOUT_MS });
      } finally {
        relayed.forget();
      }
      const context = browser.contexts()[0] ?? (await browser.newContext());
      let page: Page = context.pages().find((p) => !p.isClosed()) ?? (await context.newPage());
      // A tab the page opens (a link with target=_blank) is where the agent goes on.
      context.on('page', (p) => (page = p));
      const current = () => (page.isClosed() ? (context.pages().at(-1) ?? page) : page);
      this.d.sessions.touch(session.id, 'input');
      if (spec.url) await page.goto(spec.url, { timeout: 30_000 }).catch(() => {});
      const outcome = await runWebTask({
        prompt: spec.prompt,
        model: spec.model,
        page: current,
        answerSchema: spec.answerSchema,
        maxSteps: spec.maxSteps,
        signal: abort.signal,
        secrets: spec.secrets,
        highlight: spec.highlight,
        contextTokens: this.d.config.llmContextTokens,
        files: agentFileAccess(session.browser.rootDir),
        // POST .../agent/pause holds the agent before its next model call and action.
        whilePaused: () => this.d.interventions.whilePaused(session.id, abort.signal),
        ...(spec.humanIntervention
          ? {
              askHuman: (message: string, inputType: InputType) =>
                this.d.interventions.ask({ id: session.id, projectId: spec.projectId }, { message, inputType, signal: abort.signal }),
            }
          : {}),
        checkUrl: async (url) => {
          try {
            await assertPublicUrl(url, { allowPrivate: this.d.config.allowPrivateNetworks });
          } catch (err) {
            if (err instanceof UrlPolicyError) throw new ActionError(`Refused: ${err.message}`);
            throw err;
          }
        },
        onStep: (s) => {
          steps = [...s];
          // Acting is activity: the session's idle timeout does not end it under the agent.
          this.d.sessions.touch(session.id, 'input');
          this.d.steps.publish(session.id, s);
          spec.onStep?.(s, session.id);
        },
      });
      steps = outcome.steps;
      return { ...outcome, sessionId: session.id };
    } finally {
      clearTimeout(timer);
      clearInterval(keepAlive);
      if (streaming) this.d.steps.end(streaming);
      this.running.delete(id);
      await browser?.close().catch(() => {});
      if (temporary)
        await this.d.sessions
          .end(temporary, 'completed', 'api')
          .catch((err) => this.d.log.error({ err, sessionId: temporary }, 'could not end a web task session'));
      await this.charge(spec.projectId, steps.length);
    }
  }

  /** The run's session, claimed for it (entry.sessionId) before any other run may look. */
  private async session(spec: WebTaskSpec, entry: { sessionId?: string }): Promise<{ session: RunningSession; temporary?: string }> {
    if (spec.sessionId) {
      const s = await this.d.sessions.lookup(spec.projectId, spec.sessionId);
      if ('status' in s) throw new StartError(s.status, s.message);
      // Two agents on one page would undo each other's work.
      if ([...this.running.values()].some((r) => r.sessionId === s.id)) throw new StartError(409, 'A web task is already running in this session');
      entry.sessionId = s.id;
      return { session: s };
    }
    const created = await this.d.sessions.create({ projectId: spec.projectId, apiKeyId: spec.apiKeyId }, undefined);
    if (!created.ok) throw new StartError(created.status, created.message, created.retryAfterSeconds);
    const s = this.d.sessions.get(created.id);
    if (!s) {
      await this.d.sessions.end(created.id, 'failed', 'api').catch(() => {});
      throw new StartError(500, 'The session of the web task ended before it started');
    }
    entry.sessionId = s.id;
    return { session: s, temporary: s.id };
  }

  /** The steps' price; the session's own credits are settled when it ends. */
  private async charge(projectId: string, count: number): Promise<void> {
    const credits = roundCredits(count * this.d.config.pricePerAgentStep);
    if (count === 0) return;
    try {
      await charge(this.d.db, { projectId, kind: 'agent_step', credits });
    } catch (err) {
      this.d.log.error({ err, projectId }, 'could not record the charge of a web task');
    }
  }

  /** The session is ending: the runs in it stop before its browser goes. */
  sessionEnding(sessionId: string): void {
    for (const r of this.running.values()) if (r.sessionId === sessionId) r.abort.abort(new Error('The session of the web task ended'));
  }

  /** The server shuts down: every run fails now. */
  stopAll(): void {
    for (const r of this.running.values()) r.abort.abort(new Error('The server is shutting down'));
  }

  /** After the runs have ended. */
  close(): Promise<void> {
    return this.relay.close();
  }
}
