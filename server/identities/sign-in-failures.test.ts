// Logins that fail, end to end (real Chromium, the fixture login apps over real HTTP): a
// wrong password (invalid_credentials, and a site that echoes the password is redacted), a
// captcha that needs a human no one provides (automation_failure), a code asked of a person
// through an intervention and answered through the API. The session is answered, not signed
// in. Beside sign-in.test.ts.
import { createGuardrails, generate } from 'otplib';
import { describe, expect, it } from 'vitest';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { browserBackends } from '../testing/harness.js';
import { browsersDirFor, endSession, eventually, processesUnder } from '../sessions/test-support.js';
import { SIGN_IN_SECRETS, signedInAs, signInBench } from './test-support.js';

describe.each(browserBackends)('sessions with identities on %s', (backend) => {
  const bench = signInBench(backend);
  const { logs, api, identityEvents, sessionWith, progressOf, loginSettled } = bench;

  it(
    'a wrong password fails as invalid_credentials; a login that needs a human asks one (an intervention), and fails as automation_failure when no one answers; the session is answered, not signed in',
    { timeout: 180_000 },
    async () => {
      const wrong = await api('POST', '/v1/identities', {
        source: `${bench.site.url}/login/one-page`,
        credentials: [{ type: 'username_password', username: 'alice', password: 'not-her-password' }],
      });
      const s = await sessionWith(wrong.body.id);
      const [p] = await progressOf(s.id);
      expect(p).toEqual({
        id: wrong.body.id,
        status: 'failed',
        execution_id: expect.any(String),
        failure_type: 'invalid_credentials',
        failure_reason: 'wrong_password',
        error_message: expect.stringMatching(/refused the credentials.*Invalid username or password/),
      });
      expect(await signedInAs(bench.site, s)).toBeNull();
      expect((await api('GET', `/v1/identities/${wrong.body.id}`)).body.status).toBe('failed');
      const [event] = await identityEvents(wrong.body.id);
      expect(event).toMatchObject({
        type: 'identity.authentication_failed',
        data: { identity_id: wrong.body.id, execution_id: p.execution_id, failure_type: 'invalid_credentials', error_message: p.error_message },
      });
      await endSession(bench.server, s.id);

      // A site that repeats the password in its error: the record does not.
      const echoApp = await api('POST', '/v1/applications', { source: `${bench.site.url}/login/echo` });
      const echo = await api('POST', '/v1/identities', {
        source: `${bench.site.url}/login/echo`,
        credentials: [{ type: 'username_password', username: 'someone', password: 'echoed-Secret-9f2' }],
      });
      expect(echo.body.application_id).toBe(echoApp.body.id);
      const e = await sessionWith(echo.body.id);
      const [echoed] = await progressOf(e.id);
      expect(echoed).toMatchObject({
        status: 'failed',
        failure_type: 'invalid_credentials',
        error_message: expect.stringContaining('Wrong password [redacted]'),
      });
      expect(JSON.stringify(await identityEvents(echo.body.id))).not.toContain('echoed-Secret-9f2');
      await endSession(bench.server, e.id);

      // A captcha on the login page: a human is needed.
      const app = await api('POST', '/v1/applications', { source: `${bench.site.url}/login/captcha` });
      await api('POST', `/v1/applications/${app.body.id}/auth-flows`, { name: 'Captcha', methods: ['username_password'], login: { timeout_seconds: 3 } });
      const captcha = await api('POST', '/v1/identities', {
        source: `${bench.site.url}/login/captcha`,
        credentials: [{ type: 'username_password', username: 'alice', password: 'x' }],
      });
      const c = await sessionWith(captcha.body.id);
      expect((await progressOf(c.id))[0]).toMatchObject({
        status: 'failed',
        failure_type: 'automation_failure',
        error_message: expect.stringMatching(/captcha and needs a human: No one answered the request for a person within 3 s/),
      });
      await endSession(bench.server, c.id);

      // A code is asked for and the identity has no authenticator secret: a person is asked
      // (an intervention, answered here through the API with the code of bob's authenticator).
      const codeApp = await api('POST', '/v1/applications', { source: `${bench.site.url}/login/two-page?code-by-hand` });
      await api('POST', `/v1/applications/${codeApp.body.id}/auth-flows`, {
        name: 'Two pages',
        methods: ['username_password', 'authenticator'],
        login: { kind: 'two_pages' },
      });
      const twoPage = await api('POST', '/v1/identities', {
        source: `${bench.site.url}/login/two-page?code-by-hand`,
        credentials: [{ type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password }],
      });
      const t = await sessionWith(twoPage.body.id, { authenticate_in_background: true });
      const asked = await eventually(
        async () => (await api('GET', `/v1/sessions/${t.id}/agent/requested-human-intervention`)).body?.data?.requests?.[0],
        60_000,
        'the request for the code',
      );
      expect(asked).toMatchObject({ input_type: 'otp', message: expect.stringMatching(/one-time code and the identity has no authenticator secret/) });
      const code = await generate({ secret: LOGIN_USERS.bob.totpSecret, guardrails: createGuardrails({ MIN_SECRET_BYTES: 1 }) });
      expect((await api('POST', `/v1/sessions/${t.id}/agent/respond-to-human-intervention`, { requestId: asked.request_id, response: code })).status).toBe(200);
      const answered = await loginSettled(t.id, 60_000);
      expect(answered).toMatchObject({ status: 'authenticated' });
      expect(await signedInAs(bench.site, t)).toBe('bob');
      await endSession(bench.server, t.id);
      // No secret of this file's logins in any log line; no browser left.
      for (const line of logs) for (const secret of SIGN_IN_SECRETS) expect(line).not.toContain(secret);
      await eventually(() => processesUnder(browsersDirFor(bench.server.dataDir)).length === 0, 20_000, 'no browser process left');
    },
  );
});
