// The `auto` login's failures, each named for the caller (`failure_reason` on the session's
// identities), end to end: real Chromium, the fixture login apps over real HTTP. A wrong
// password on an identifier-first login; a wrong code (a wrong authenticator secret), and
// one the site finds expired; a locked account; a captcha no solver or person gets past; a code sent by e-mail, answered
// by a person through an intervention, and failing when no one answers; a page no rule
// knows, with its screenshot. Beside auto-login.test.ts.
import { describe, expect, it } from 'vitest';
import { EMAILED_CODE } from '../../fixtures/login-auto.js';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { browserBackends } from '../testing/harness.js';
import { browsersDirFor, endSession, eventually, processesUnder } from '../sessions/test-support.js';
import { SIGN_IN_SECRETS, signedInAs, signInBench } from './test-support.js';

const alice = [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }];

describe.each(browserBackends)('the auto login on %s', (backend) => {
  const bench = signInBench(backend);
  const { logs, api, sessionWith, progressOf, identityAt, loginSettled } = bench;

  /** The identity's progress after a session of its own (ended). */
  async function outcome(identityId: string): Promise<any> {
    const s = await sessionWith(identityId);
    try {
      const [p] = await progressOf(s.id);
      return p;
    } finally {
      await endSession(bench.server, s.id);
    }
  }

  it('a wrong password, a wrong or expired code, a locked account, a captcha: each named', { timeout: 60_000 }, async () => {
    const wrongPassword = await identityAt('/login/two-page', [{ type: 'username_password', username: 'alice', password: 'not-hers' }]);
    expect(await outcome(wrongPassword)).toMatchObject({
      status: 'failed',
      failure_type: 'invalid_credentials',
      failure_reason: 'wrong_password',
      error_message: expect.stringMatching(/refused the credentials.*Invalid username or password/),
    });
    // bob's password, an authenticator secret that is not his: the site refuses the code.
    const wrongCode = await api('POST', '/v1/identities', {
      source: `${bench.site.url}/login/two-page`,
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ' },
      ],
    });
    expect(await outcome(wrongCode.body.id)).toMatchObject({
      status: 'failed',
      failure_type: 'invalid_credentials',
      failure_reason: 'wrong_code',
      error_message: expect.stringMatching(/refused the one-time code.*That code is not valid/),
    });
    // A code the site says has expired (alice's password, then any authenticator code) is a wrong_code too.
    const expired = await identityAt('/auto/expired', [...alice, { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret }]);
    expect(await outcome(expired)).toMatchObject({
      status: 'failed',
      failure_type: 'invalid_credentials',
      failure_reason: 'wrong_code',
      error_message: expect.stringMatching(/refused the one-time code.*This code has expired\. Request a new one\./),
    });
    expect(await outcome(await identityAt('/auto/locked', alice))).toMatchObject({
      status: 'failed',
      failure_type: 'automation_failure',
      failure_reason: 'account_locked',
      error_message: expect.stringMatching(/account is locked.*locked after too many failed attempts/),
    });
    // No solver in the session, and no one takes over within the flow's 3 s.
    expect(await outcome(await identityAt('/login/captcha', alice, { timeout_seconds: 3 }))).toMatchObject({
      status: 'failed',
      failure_type: 'automation_failure',
      failure_reason: 'captcha',
      error_message: expect.stringMatching(/captcha and needs a human: No one answered/),
    });
  });

  it(
    'a code sent by e-mail: a person answers it (an intervention), or the login fails as needs_person; an unknown page has a screenshot',
    { timeout: 60_000 },
    async () => {
      const emailed = await identityAt('/auto/emailed', alice);
      const s = await sessionWith(emailed, { authenticate_in_background: true });
      const asked = await eventually(
        async () => (await api('GET', `/v1/sessions/${s.id}/agent/requested-human-intervention`)).body?.data?.requests?.[0],
        30_000,
        'the request for the code',
      );
      expect(asked).toMatchObject({ input_type: 'otp', message: expect.stringMatching(/sent a one-time code/) });
      expect(
        (await api('POST', `/v1/sessions/${s.id}/agent/respond-to-human-intervention`, { requestId: asked.request_id, response: EMAILED_CODE })).status,
      ).toBe(200);
      const answered = await loginSettled(s.id, 30_000);
      expect(answered).toMatchObject({ status: 'authenticated' });
      expect(await signedInAs(bench.site, s)).toBe('alice');
      await endSession(bench.server, s.id);

      // No one answers within the flow's 3 s.
      const unanswered = await identityAt('/auto/emailed?short', alice, { timeout_seconds: 3 });
      expect(await outcome(unanswered)).toMatchObject({ status: 'failed', failure_type: 'automation_failure', failure_reason: 'needs_person' });

      const riddle = await identityAt('/auto/riddle', alice);
      const unknown = await outcome(riddle);
      expect(unknown).toMatchObject({
        status: 'failed',
        failure_type: 'automation_failure',
        failure_reason: 'unknown_page',
        screenshot_url: expect.stringMatching(new RegExp(`/v1/identities/${riddle}/login-screenshot$`)),
        error_message: expect.stringMatching(/does not know how to answer.*Security question/),
      });
      const png = await bench.server.request(new URL(unknown.screenshot_url).pathname);
      expect(png.status).toBe(200);
      expect(png.headers.get('content-type')).toBe('image/png');
      expect([...new Uint8Array(await png.arrayBuffer()).slice(0, 4)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
      // It goes with the identity.
      await api('DELETE', `/v1/identities/${riddle}`);
      expect((await bench.server.request(new URL(unknown.screenshot_url).pathname)).status).toBe(404);

      for (const line of logs) for (const secret of SIGN_IN_SECRETS) expect(line).not.toContain(secret);
      await eventually(() => processesUnder(browsersDirFor(bench.server.dataDir)).length === 0, 20_000, 'no browser process left');
    },
  );
});
