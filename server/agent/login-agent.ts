// The agent as a login's last resort: an identity's `auto` login (identities/auto-login.ts)
// hands it a page its rules do not understand, when the operator configured a model. The
// model sees the page as perform-web-task's agent does, and the identity's credentials only
// by name ({{username}}, {{password}}, {{one_time_code}}): their values are typed by the
// server, on the application's own hosts only, and redacted from everything the model reads.
// It answers a verdict the login turns into its outcome; the login checks a claimed sign-in
// itself.
import type { Page } from 'playwright-core';
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config/config.js';
import { languageModel } from '../llm/index.js';
import { ActionError } from './actions.js';
import { compileAnswerSchema, type AnswerSchema } from './answer-schema.js';
import { runWebTask } from './loop.js';

export const LOGIN_VERDICTS = ['signed_in', 'wrong_password', 'wrong_code', 'account_locked', 'captcha', 'needs_person'] as const;
export type LoginVerdict = (typeof LOGIN_VERDICTS)[number];

export interface LoginAgentTask {
  page: Page;
  loginUrl: string;
  /** By name: username, password, one_time_code (those the identity has). */
  secrets: Record<string, string>;
  /** Hosts on which the secrets may be typed, and to which the agent may navigate. */
  allowedHosts: ReadonlySet<string>;
  timeoutMs: number;
}

/** What the agent concluded (`gave_up`: it could not tell, ran out of steps or time, or the model failed). */
export type LoginAgentOutcome = { verdict: LoginVerdict | 'gave_up'; detail: string; modelCalls: number };

export type LoginAgent = (task: LoginAgentTask) => Promise<LoginAgentOutcome>;

/** Steps a login may take: a few pages of a few fields each. */
const MAX_STEPS = 15;

const ANSWER = compileAnswerSchema({
  type: 'object',
  properties: { verdict: { enum: [...LOGIN_VERDICTS] }, detail: { type: 'string' } },
  required: ['verdict'],
  additionalProperties: false,
}) as AnswerSchema;

/** The login agent, or undefined when no model is configured (LLM_PROVIDER unset). */
export function loginAgent(o: { config: ServiceConfig; log: Logger }): LoginAgent | undefined {
  const llm = o.config.llm;
  if (!llm) return undefined;
  const model = languageModel(llm, { timeoutMs: o.config.llmTimeoutSeconds * 1000 });
  return async (t) => {
    const host = (url: string) => {
      try {
        return new URL(url).hostname.toLowerCase();
      } catch {
        return '';
      }
    };
    const names = Object.keys(t.secrets);
    const outcome = await runWebTask({
      prompt: [
        `Sign in to ${host(t.loginUrl)} as the account owner, on the page shown (its login page is ${t.loginUrl}).`,
        `Type the credentials by name: ${names.map((n) => `{{${n}}}`).join(', ')}. Answer what the pages ask (an account to choose, a "stay signed in?" question, a cookie notice) as the owner would.`,
        'Finish with verdict signed_in once the page shows the account signed in; wrong_password or wrong_code when the site refuses them;',
        'account_locked when it says the account is locked; captcha for a captcha you cannot pass; needs_person for a step only the owner can do',
        '(a code sent by e-mail or SMS, a device to confirm on). Say in detail what the page said.',
      ].join(' '),
      model,
      page: () => t.page,
      answerSchema: ANSWER,
      maxSteps: MAX_STEPS,
      signal: AbortSignal.timeout(t.timeoutMs),
      secrets: t.secrets,
      secretsAllowedOn: (url) => t.allowedHosts.has(host(url)),
      highlight: false,
      checkUrl: async (url) => {
        if (!t.allowedHosts.has(host(url))) throw new ActionError(`Refused: the login stays on ${[...t.allowedHosts].join(', ')}`);
      },
      whilePaused: async () => {},
      files: { list: async () => [], path: async () => undefined },
      contextTokens: o.config.llmContextTokens,
    });
    if (!outcome.ok) {
      o.log.info({ kind: outcome.kind, modelCalls: outcome.modelCalls }, 'login agent gave up');
      return { verdict: 'gave_up', detail: outcome.error, modelCalls: outcome.modelCalls };
    }
    const answer = outcome.answer as { verdict: LoginVerdict; detail?: string };
    return { verdict: answer.verdict, detail: answer.detail ?? '', modelCalls: outcome.modelCalls };
  };
}
