// Agent access: an AI agent with no key reads the guide, gets a challenge, answers it, and
// receives an API key for a new project with starter credits and a session-length cap.
// Every answer of these operations, errors included, names the next step and the docs.
import type { Logger } from 'pino';
import type { components } from '../../generated/types.js';
import type { Config } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import type { PublicContext } from '../http/context.js';
import type { RateLimits } from '../http/rate-limit/index.js';
import type { Db } from '../store/db.js';
import { answerMatches, hashAnswer, hashToken, newChallenge, newChallengeId, newToken, rateKey } from './challenge.js';
import { insertChallenge, redeemChallenge, sweepChallenges } from './store.js';

type Schemas = components['schemas'];
type Next = Schemas['AgentAccessNext'];
export type AgentAccessOperation = 'getAgentAccessGuide' | 'getAgentAccessChallenge' | 'submitAgentAccess';

export interface AgentAccessDeps {
  db: Db;
  config: Pick<
    Config,
    | 'agentAccessAnonymousCredits'
    | 'agentAccessIdentityCredits'
    | 'agentAccessChallengeTtlSeconds'
    | 'agentAccessSessionMaxMinutes'
    | 'agentAccessRatePerMinute'
  > & { publicUrl: string };
  log: Logger;
  rateLimits: RateLimits;
}

const GUIDE = '/v1/agent-access';
const CHALLENGE = '/v1/agent-access/challenge';
const SESSIONS = '/v1/sessions';

const toChallenge: Next = { path: CHALLENGE, description: 'GET this path to receive a challenge to solve.' };
const toSubmit: Next = { path: GUIDE, description: 'POST {token, answer} here as JSON before expires_at.' };
const toSessions: Next = {
  path: SESSIONS,
  description: 'POST here with header service-api-key set to api_key to start a browser session.',
};
const retryChallenge: Next = { path: CHALLENGE, description: 'GET a new challenge and try again.' };
const SWEEP_EVERY_MS = 60_000;

export function agentAccessHandlers({ db, config, log, rateLimits }: AgentAccessDeps): Pick<AppHandlers, AgentAccessOperation> {
  const docs = `${config.publicUrl}/docs`;
  const ttl = config.agentAccessChallengeTtlSeconds;
  const fail = <S extends 400 | 401 | 429>(status: S, error: string, next: Next, headers?: Record<string, string>) => ({
    status,
    body: { error, next, docs } satisfies Schemas['AgentAccessError'],
    headers,
  });

  // One window per client address across the three operations: the flow takes three
  // requests, so the default 60 a minute leaves room for retries and nothing for mass
  // minting of projects. Keyed by the TCP peer (ctx.clientIp): behind a reverse proxy that
  // is the proxy, and every client shares its budget.
  const limiter = rateLimits.limiter('agent_access', config.agentAccessRatePerMinute);
  const limited = async (ctx: PublicContext) => {
    const verdict = await limiter.take(rateKey(ctx.clientIp));
    if (verdict.allowed) return undefined;
    return fail(
      429,
      'Too many requests; retry after the time in Retry-After',
      { path: GUIDE, description: 'Wait, then retry.' },
      {
        'Retry-After': String(verdict.retryAfterSeconds),
      },
    );
  };

  const guide: Schemas['AgentAccessGuide'] = {
    purpose:
      'Lets an AI agent obtain an API key for this service without a dashboard account: solve one challenge, ' +
      'receive a key to a new project with starter credits.',
    docs,
    credits: {
      anonymous: config.agentAccessAnonymousCredits,
      with_identity: config.agentAccessAnonymousCredits + config.agentAccessIdentityCredits,
    },
    ttl_seconds: ttl,
    limits: { session_max_duration_minutes: config.agentAccessSessionMaxMinutes },
    flow: [
      {
        step: 1,
        path: CHALLENGE,
        why: `GET a challenge and its token; the token answers once and expires after ttl_seconds (${ttl}).`,
      },
      {
        step: 2,
        path: GUIDE,
        why:
          'POST {"token": <token>, "answer": "<answer as a string>"} as JSON to receive api_key. ' + 'A wrong answer spends the token: start again at step 1.',
      },
      {
        step: 3,
        path: SESSIONS,
        why:
          'POST with header service-api-key: <api_key> to start a browser session; sessions of this key ' +
          `last at most ${config.agentAccessSessionMaxMinutes} minutes.`,
      },
    ],
    next: toChallenge,
    identity: {
      optional: true,
      extra_credits: config.agentAccessIdentityCredits,
      submit:
        'Send an OIDC ID token as identity_token in the body of POST /v1/agent-access. This server lists no ' +
        'OIDC issuer in oidc, so it accepts no identity token: omit identity_token.',
      // No issuer is configurable in this build: verifying a token needs the issuer's JWKS,
      // fetched over the network.
      oidc: [],
    },
  };

  let lastSweep = 0;
  const sweepSometimes = (ctx: PublicContext) => {
    if (Date.now() - lastSweep < SWEEP_EVERY_MS) return;
    lastSweep = Date.now();
    sweepChallenges(db).catch((err) => ctx.log.warn({ err }, 'agent-access challenge sweep failed'));
  };

  log.debug({ ttlSeconds: ttl, ratePerMinute: config.agentAccessRatePerMinute }, 'agent access ready');

  return {
    async getAgentAccessGuide(_req, ctx) {
      return (await limited(ctx)) ?? { status: 200 as const, body: guide };
    },

    async getAgentAccessChallenge(_req, ctx) {
      const refused = await limited(ctx);
      if (refused) return refused;
      sweepSometimes(ctx);
      const challenge = newChallenge();
      const id = newChallengeId();
      const token = newToken();
      const { expiresAt } = await insertChallenge(db, {
        id,
        type: challenge.type,
        tokenHash: hashToken(token),
        answerHash: hashAnswer(token, challenge.answer),
        ttlSeconds: ttl,
      });
      return {
        status: 200,
        body: {
          challenge: { id, type: challenge.type, title: challenge.title, prompt: challenge.prompt },
          token,
          expires_at: expiresAt.toISOString(),
          instructions:
            `Solve the challenge and POST {"token": "<token>", "answer": "<your answer>"} as JSON to ${GUIDE} ` +
            'before expires_at. answer is a string. The token answers once, right or wrong.',
          next: toSubmit,
        },
      };
    },

    async submitAgentAccess(req, ctx) {
      const refused = await limited(ctx);
      if (refused) return refused;
      const { token, answer, identity_token } = req.body;
      // Checked before the challenge is touched, so the same token and answer can be sent
      // again without identity_token.
      if (identity_token !== undefined) {
        return fail(401, 'Invalid identity_token: this server accepts no identity tokens (the guide lists no OIDC issuer)', {
          path: GUIDE,
          description: 'Send the same token and answer again, without identity_token.',
        });
      }
      const result = await redeemChallenge(db, {
        tokenHash: hashToken(token),
        check: (stored) => answerMatches(token, answer, stored),
        credits: config.agentAccessAnonymousCredits,
        maxSessionMinutes: config.agentAccessSessionMaxMinutes,
      });
      switch (result.outcome) {
        case 'unknown':
          return fail(401, 'Invalid challenge token', retryChallenge);
        case 'used':
          return fail(401, 'Challenge token already used: each token answers once', retryChallenge);
        case 'expired':
          return fail(401, `Challenge token expired: a token lives ${ttl} seconds`, retryChallenge);
        case 'wrong':
          ctx.log.debug('agent-access wrong answer');
          return fail(401, 'Wrong answer', retryChallenge);
        case 'issued':
          ctx.log.info({ projectId: result.projectId }, 'agent-access project created');
          return {
            status: 200,
            body: { api_key: result.apiKey, project_id: result.projectId, credits_granted: result.credits, next: toSessions },
          };
      }
    },
  };
}
