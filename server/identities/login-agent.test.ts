// The login agent (agent/login-agent.ts) on a page the `auto` login's rules do not read, end
// to end: real Chromium, the fixture login site over real HTTP, a scripted model over the
// OpenAI protocol. The agent signs in typing the credentials by name, and the model never
// receives their values; a refusal it reads is named as the rules name theirs; a sign-in it
// claims on a page that is still the login is not believed; it may not type them on another
// host (the form in a frame of one). Without a model the same page is
// an unknown page (auto-login-failures.test.ts has the riddle).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { startScriptedModel, type ScriptedModelServer, type ScriptedReply } from '../llm/scripted-server.js';
import { lastObservation, lastToolResults, refOf } from '../agent/test-support.js';
import { browserBackends } from '../testing/harness.js';
import { browsersDirFor, endSession, eventually, processesUnder } from '../sessions/test-support.js';
import { SIGN_IN_SECRETS, signedInAs, signInBench } from './test-support.js';

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
/** Types both credentials by name into the members' form, then submits it. */
const typeCredentials = (body: any): ScriptedReply => {
  const seen = lastObservation(body);
  return {
    toolCalls: [
      call('type', { ref: refOf(seen, 'textbox', 'Member ID'), text: '{{username}}' }),
      call('type', { ref: refOf(seen, 'textbox', 'Memorable word'), text: '{{password}}', submit: true }),
    ],
  };
};
const finish = (verdict: string, detail = '') => ({ toolCalls: [call('finish', { answer: { verdict, ...(detail ? { detail } : {}) } })] });

describe.each(browserBackends)('the login agent on %s', (backend) => {
  let model: ScriptedModelServer;
  beforeAll(async () => {
    model = await startScriptedModel();
  });
  afterAll(async () => {
    await model?.close();
  });
  const bench = signInBench(backend, {
    env: () => ({ LLM_PROVIDER: 'openai', LLM_BASE_URL: model.baseUrl('openai'), LLM_API_KEY: 'sk-model-key', LLM_MODEL: 'small-test', LLM_IMAGES: 'false' }),
  });
  const { logs, identityAt, sessionWith, progressOf } = bench;

  const ALICE = [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }];

  /** The identity's progress after a session of its own; the session is left to the caller. */
  async function signIn(identityId: string) {
    const s = await sessionWith(identityId);
    const [p] = await progressOf(s.id);
    return { s, p };
  }

  /** The progress of a new identity at `path` after a session of its own (ended). */
  async function outcomeAt(path: string, credentials: object[] = ALICE) {
    const { s, p } = await signIn(await identityAt(path, credentials));
    await endSession(bench.server, s.id);
    return p;
  }

  it('signs in on a page no rule reads, typing the credentials by name: the model never receives them', { timeout: 60_000 }, async () => {
    model.script([
      typeCredentials, // The user name is a secret too: the page's greeting reaches the model redacted.
      (body) => (expect(lastObservation(body)).toContain('Welcome, {{username}}'), finish('signed_in')),
    ]);
    const id = await identityAt('/auto/member', ALICE);
    const { s, p } = await signIn(id);
    try {
      expect(model.errors).toEqual([]);
      expect(p).toMatchObject({ id, status: 'authenticated' });
      expect(await signedInAs(bench.site, s)).toBe('alice');
    } finally {
      await endSession(bench.server, s.id);
    }
    expect(model.received).toHaveLength(2);
    const sent = JSON.stringify(model.received.map((r) => r.body));
    expect(sent).toContain('{{password}}');
    for (const secret of SIGN_IN_SECRETS) expect(sent).not.toContain(secret);
    expect(model.received[0]!.headers.authorization).toBe('Bearer sk-model-key');
    expect(logs.some((l) => l.includes('the agent took a page the rules do not understand') && l.includes('signed_in'))).toBe(true);
  });

  it('a refusal the agent reads is named; a sign-in it claims on the login page is not believed', { timeout: 60_000 }, async () => {
    model.script([
      typeCredentials,
      (body) => (expect(lastToolResults(body).join('\n')).toContain('Typed and pressed Enter'), finish('wrong_password', 'Those details are not recognised.')),
    ]);
    expect(await outcomeAt('/auto/member?wrong', [{ type: 'username_password', username: 'alice', password: 'not-hers' }])).toMatchObject({
      status: 'failed',
      failure_type: 'invalid_credentials',
      failure_reason: 'wrong_password',
      error_message: expect.stringContaining('Those details are not recognised.'),
    });

    // Claimed at once, nothing typed: the page is still the members' form.
    model.script([finish('signed_in')]);
    expect(await outcomeAt('/auto/member?claimed')).toMatchObject({
      status: 'failed',
      failure_type: 'automation_failure',
      failure_reason: 'unknown_page',
      error_message: expect.stringContaining('The agent said the login was done, but the page is still the login'),
    });
    // The form is in a frame of another host: the agent may not type the credentials there.
    model.script([
      typeCredentials,
      (body) => {
        expect(lastToolResults(body).join('\n')).toContain('Secrets may not be typed on localhost');
        return { toolCalls: [call('give_up', { reason: 'the form is on another site' })] };
      },
    ]);
    expect(await outcomeAt('/auto/member-framed')).toMatchObject({
      status: 'failed',
      failure_reason: 'unknown_page',
      error_message: expect.stringContaining('(The agent gave up: the form is on another site)'),
    });
    expect(model.errors).toEqual([]);
    for (const line of logs) for (const secret of SIGN_IN_SECRETS) expect(line).not.toContain(secret);
    await eventually(() => processesUnder(browsersDirFor(bench.server.dataDir)).length === 0, 20_000, 'no browser process left');
  });
});
