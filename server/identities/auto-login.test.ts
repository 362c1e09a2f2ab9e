// The `auto` login (the default when a flow says nothing), end to end: real Chromium, the
// fixture login apps over real HTTP. Identities made from only their login page and
// credentials sign in on pages nobody described: one page; identifier-first; identifier-
// first with a TOTP code on a third page; "stay signed in?"; a form in an iframe; a form
// rendered by JavaScript after load; a cookie wall; an account chooser; a captcha in front
// of the login, passed by the session's own solver (the local captcha-solving service,
// fixtures/captcha-service.ts) with no one asked. The failures are in
// auto-login-failures.test.ts.
import { Server as ProxyChainServer } from 'proxy-chain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCaptchaService, type CaptchaService } from '../../fixtures/captcha-service.js';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { FIXTURE_SITEKEY } from '../../fixtures/server.js';
import { browserBackends } from '../testing/harness.js';
import { browsersDirFor, endSession, eventually, headless, processesUnder } from '../sessions/test-support.js';
import { SIGN_IN_SECRETS, signedInAs, signInBench } from './test-support.js';

const alice = [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }];

// Started before the bench's server, which is configured with the service; a session's
// captcha solver wants an active proxy (a local one).
let service: CaptchaService;
let proxy: ProxyChainServer;
beforeAll(async () => {
  service = await startCaptchaService();
  proxy = new ProxyChainServer({ port: 0, host: '127.0.0.1', verbose: false });
  await proxy.listen();
});
afterAll(async () => {
  await proxy?.close(true);
  await service?.close();
});

describe.each(browserBackends)('the auto login on %s', (backend) => {
  const bench = signInBench(backend, { env: () => ({ CAPTCHA_SERVICE_URL: service.url, CAPTCHA_SERVICE_KEY: service.key }) });
  const { logs, api, sessionWith, progressOf, identityAt } = bench;

  /** Signs the identity in in a session of its own: answers who /app/home then greets. */
  async function signIn(identityId: string): Promise<string | null> {
    const s = await sessionWith(identityId);
    try {
      expect(await progressOf(s.id)).toEqual([{ id: identityId, status: 'authenticated', execution_id: expect.any(String) }]);
      return await signedInAs(bench.site, s);
    } finally {
      await endSession(bench.server, s.id);
    }
  }

  it('an identity made from only its login page and credentials signs in: user name, then password, then a TOTP code', { timeout: 60_000 }, async () => {
    // The case: no application, no flow; the default flow is auto.
    const bob = await api('POST', '/v1/identities', {
      source: `${bench.site.url}/login/two-page`,
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
      ],
    });
    expect(bob.status).toBe(201);
    const flows = await api('GET', `/v1/applications/${bob.body.application_id}/auth-flows`);
    expect(flows.body.auth_flows).toEqual([]);
    expect(await signIn(bob.body.id)).toBe('bob');
    // Identifier-first without a code (alice joins the same application).
    const aliceThere = await api('POST', '/v1/identities', { source: `${bench.site.url}/login/two-page`, credentials: alice });
    expect(await signIn(aliceThere.body.id)).toBe('alice');
  });

  it('one page; "stay signed in?"; a form in an iframe; a form rendered after load; a cookie wall; an account chooser', { timeout: 90_000 }, async () => {
    for (const path of ['/login/one-page', '/auto/kmsi', '/auto/framed', '/auto/spa', '/auto/cookies', '/login/choose']) {
      const id = await identityAt(path, alice);
      expect({ path, user: await signIn(id) }).toEqual({ path, user: 'alice' });
    }
    // A flow that names kind auto and selectors is refused: auto finds the fields itself.
    const app = await api('POST', '/v1/applications', { source: `${bench.site.url}/auto/selectors` });
    const refused = await api('POST', `/v1/applications/${app.body.id}/auth-flows`, {
      name: 'x',
      methods: ['username_password'],
      login: { kind: 'auto', selectors: { username: '#u' } },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/auto login finds the fields itself/);
    for (const line of logs) for (const secret of SIGN_IN_SECRETS) expect(line).not.toContain(secret);
    await eventually(() => processesUnder(browsersDirFor(bench.server.dataDir)).length === 0, 20_000, 'no browser process left');
  });

  /** A headless session with the captcha solver on, behind the local proxy (the contract wants one for the solver). */
  const solverSession = () => ({
    ...headless({ proxy: { active: true, type: 'custom', server: `http://127.0.0.1:${proxy.port}` } }),
    browser: { headless: { active: true }, captcha_solver: { active: true } },
  });

  it("a captcha in front of the login: the session's solver passes it, and no person is asked", { timeout: 60_000 }, async () => {
    const id = await identityAt('/auto/captcha', alice);
    const s = await sessionWith(id, solverSession());
    try {
      expect(await progressOf(s.id)).toEqual([{ id, status: 'authenticated', execution_id: expect.any(String) }]);
      expect(await signedInAs(bench.site, s)).toBe('alice');
      expect(service.tasks).toEqual([{ type: 'RecaptchaV2TaskProxyless', websiteURL: `${bench.site.url}/auto/captcha`, websiteKey: FIXTURE_SITEKEY }]);
      const [asked] = await bench.server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM interventions WHERE session_id = $1', [s.id]);
      expect(asked!.n).toBe(0);
      expect((await api('GET', `/v1/identities/${id}`)).body.status).toBe('active');
    } finally {
      await endSession(bench.server, s.id);
    }
    expect(logs.join('\n')).not.toContain(service.key);
  });

  it(
    'a captcha inside a short login form: the solver answers it without sending the form, and the login sends it once, filled',
    { timeout: 60_000 },
    async () => {
      const id = await identityAt('/auto/captcha-form', alice);
      const before = service.tasks.length;
      const s = await sessionWith(id, solverSession());
      try {
        // The fixture takes each token once: a form sent before its credentials were typed would have used it up.
        expect(await progressOf(s.id)).toEqual([{ id, status: 'authenticated', execution_id: expect.any(String) }]);
        expect(await signedInAs(bench.site, s)).toBe('alice');
        expect(service.tasks.slice(before)).toEqual([
          { type: 'RecaptchaV2TaskProxyless', websiteURL: `${bench.site.url}/auto/captcha-form`, websiteKey: FIXTURE_SITEKEY },
        ]);
        const [asked] = await bench.server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM interventions WHERE session_id = $1', [s.id]);
        expect(asked!.n).toBe(0);
      } finally {
        await endSession(bench.server, s.id);
      }
    },
  );
});
