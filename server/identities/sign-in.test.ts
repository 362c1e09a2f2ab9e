// Sessions that arrive signed in, end to end: real Chromium, the fixture login apps over
// real HTTP, Playwright over cdp_url to see what the user sees. A pending identity signs in
// before the answer; its state is saved as its profile when the session ends, and the next
// session reuses it (and, when asked to validate, signs in again once the site has ended
// the sign-in). Two pages with a TOTP code, a custom step list, a wrong password, a login
// that needs a human, the background mode, validateAsync=false; the events against their
// schemas; nothing of a browser left behind.
import { createGuardrails, generate } from 'otplib';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { loadEventSchemas } from '../events/schema.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, createSession, endSession, eventually, getSession, HEADLESS, processesUnder, type Created } from '../sessions/test-support.js';
import { failInterrupted } from './store.js';
import { call } from './test-support.js';

const schemas = loadEventSchemas();

/** What the session's first tab shows at /app/home: the signed-in user, or null. */
async function signedInAs(site: FixtureServer, s: Created): Promise<string | null> {
  const browser = await chromium.connectOverCDP(s.cdp_url);
  try {
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(`${site.url}/app/home`);
    const heading = page.locator('#signed-in');
    return (await heading.count()) ? (await heading.innerText()).replace('Welcome, ', '') : null;
  } finally {
    await browser.close();
  }
}

describe.each(browserBackends)('sessions with identities on %s', (backend) => {
  let server: TestServer;
  let site: FixtureServer;
  const logs: string[] = [];
  const api = (method: string, path: string, body?: unknown) => call(server, method, path, body);

  const identityEvents = async (identityId: string) => {
    const rows = await server.db.query<{ id: string; type: string; created: Date | string; project_id: string; text: string; data: any }>(
      `SELECT * FROM events WHERE type LIKE 'identity.%' AND data->>'identity_id' = $1 ORDER BY created`,
      [identityId],
    );
    for (const r of rows) {
      const envelope = { id: r.id, type: r.type, created: new Date(r.created).toISOString(), project_id: r.project_id, text: r.text, data: r.data };
      const validate = schemas.validator(r.type)!;
      expect(validate(envelope), JSON.stringify(validate.errors)).toBe(true);
    }
    return rows;
  };

  const sessionWith = (identityId: string, extra: object = {}) => createSession(server, { ...HEADLESS, identities: [{ id: identityId }], ...extra });
  const progressOf = async (sessionId: string) => (await getSession(server, sessionId)).body.data.identities;

  beforeAll(async () => {
    site = await startFixtureServer();
    server = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => {
    await server?.close();
    await site?.close();
  });

  it('a pending identity signs in before the answer; its saved state signs the next session in; validation signs in again once the site ended it', { timeout: 240_000 }, async () => {
    const alice = await api('POST', '/v1/identities', {
      name: 'Alice',
      source: `${site.url}/login/one-page`,
      credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
    });
    expect(alice.status).toBe(201);
    const id = alice.body.id;

    const first = await sessionWith(id, { session: { recording: { active: false }, initial_url: `${site.url}/app/home` } });
    // Answered signed in, on the page it asked for.
    expect(await signedInAs(site, first)).toBe('alice');
    const [progress] = await progressOf(first.id);
    expect(progress).toEqual({ id, status: 'authenticated', execution_id: expect.any(String) });
    expect((await api('GET', `/v1/identities/${id}`)).body.status).toBe('active');
    const [event] = await identityEvents(id);
    expect(event).toMatchObject({
      type: 'identity.authenticated',
      data: { identity_id: id, application_id: alice.body.application_id, session_id: first.id, execution_id: progress.execution_id },
    });

    // Its end saves the state as the identity's profile.
    await endSession(server, first.id);
    const saved = await eventually(async () => {
      const p = (await api('GET', `/v1/profiles/identity-${id}`)).body?.data;
      return p?.status === 'ready' ? p : undefined;
    }, 30_000, 'the identity profile to be saved');
    expect(saved.session_id).toBe(first.id);

    // Reused: no login, signed in all the same.
    const second = await sessionWith(id);
    expect(await progressOf(second.id)).toEqual([{ id, status: 'reused' }]);
    expect(await signedInAs(site, second)).toBe('alice');
    await endSession(server, second.id);
    // Validated while still signed in: reused.
    const checked = await sessionWith(id, { skip_profile_validation: false });
    expect(await progressOf(checked.id)).toEqual([{ id, status: 'reused' }]);
    await endSession(server, checked.id);

    // The site ends alice's sign-ins: a reused profile is signed out. Validation notices,
    // and signs in again.
    await fetch(`${site.url}/app/expire?user=alice`);
    const third = await sessionWith(id, { skip_profile_validation: false });
    expect(await progressOf(third.id)).toEqual([{ id, status: 'authenticated', execution_id: expect.any(String) }]);
    expect(await signedInAs(site, third)).toBe('alice');
    await endSession(server, third.id);
    expect((await identityEvents(id)).map((e) => e.type)).toEqual(['identity.authenticated', 'identity.authenticated']);

    // Deleting the identity deletes its profile.
    expect((await api('DELETE', `/v1/identities/${id}`)).status).toBe(200);
    expect((await api('GET', `/v1/profiles/identity-${id}`)).status).toBe(404);
  });

  it('two pages and a TOTP code, by the ready-made kind and by a custom step list; an account chooser', { timeout: 180_000 }, async () => {
    const app = await api('POST', '/v1/applications', { source: `${site.url}/login/two-page`, name: 'Two pages' });
    const flow = await api('POST', `/v1/applications/${app.body.id}/auth-flows`, {
      name: 'Password then code',
      methods: ['username_password', 'authenticator'],
      is_recommended: true,
      login: { kind: 'two_pages', success: { selector: '#signed-in' } },
    });
    expect(flow.status).toBe(201);
    const bob = await api('POST', '/v1/identities', {
      source: `${site.url}/login/two-page`,
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
      ],
    });
    expect(bob.body.application_id).toBe(app.body.id);
    const s = await sessionWith(bob.body.id);
    expect(await progressOf(s.id)).toEqual([{ id: bob.body.id, status: 'authenticated', execution_id: expect.any(String) }]);
    expect(await signedInAs(site, s)).toBe('bob');
    await endSession(server, s.id);

    // The same login written out step by step.
    const custom = await api('PATCH', `/v1/applications/${app.body.id}/auth-flows/${flow.body.id}`, {
      login: {
        kind: 'custom',
        steps: [
          { action: 'wait_for_selector', selector: 'input[name=login]' },
          { action: 'fill', selector: 'input[name=login]', value: '{{username}}' },
          { action: 'click', selector: 'text=Next' },
          { action: 'wait_for_url', url_contains: '/password' },
          { action: 'fill', selector: 'input[name=pw]', value: '{{password}}' },
          { action: 'click', selector: 'button[type=submit]' },
          { action: 'totp', selector: 'input[name=code]' },
          { action: 'click', selector: 'text=Verify' },
        ],
        success: { url_contains: '/app/home', text: 'You are signed in' },
      },
    });
    expect(custom.status).toBe(200);
    await api('PUT', `/v1/identities/${bob.body.id}`, {
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
      ],
    });
    expect((await api('GET', `/v1/identities/${bob.body.id}`)).body.status).toBe('pending');
    const again = await sessionWith(bob.body.id);
    expect(await progressOf(again.id)).toMatchObject([{ status: 'authenticated' }]);
    expect(await signedInAs(site, again)).toBe('bob');
    await endSession(server, again.id);

    // An account chooser first, then the password of the chosen account.
    const chooser = await api('POST', '/v1/applications', { source: `${site.url}/login/choose`, name: 'Chooser' });
    await api('POST', `/v1/applications/${chooser.body.id}/auth-flows`, {
      name: 'Choose, then password',
      methods: ['username_password'],
      login: {
        kind: 'custom',
        steps: [
          { action: 'choose_account', selector: 'ul.accounts' },
          { action: 'fill', selector: 'input[type=password]', value: '{{password}}' },
          { action: 'click', selector: 'button[type=submit]' },
        ],
        success: { selector: '#signed-in' },
      },
    });
    const chosen = await api('POST', '/v1/identities', {
      source: `${site.url}/login/choose`,
      credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
    });
    expect(chosen.body.application_id).toBe(chooser.body.id);
    const c = await sessionWith(chosen.body.id);
    expect(await progressOf(c.id)).toMatchObject([{ status: 'authenticated' }]);
    expect(await signedInAs(site, c)).toBe('alice');
    await endSession(server, c.id);

    // Two identities of two web apps (two hosts) in one session: both sign in, and the
    // session's end saves the state into both identities' profiles.
    const local = site.url.replace('127.0.0.1', 'localhost');
    const localApp = await api('POST', '/v1/applications', { source: `${local}/login/two-page` });
    await api('POST', `/v1/applications/${localApp.body.id}/auth-flows`, { name: 'Two pages', methods: ['username_password', 'authenticator'], login: { kind: 'two_pages' } });
    const bobThere = await api('POST', '/v1/identities', {
      source: `${local}/login/two-page`,
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
      ],
    });
    // Its own application (an identity otherwise joins the oldest one of its origin).
    await api('POST', '/v1/applications', { source: `${site.url}/login/one-page` });
    const aliceHere = await api('POST', '/v1/identities', { source: `${site.url}/login/one-page`, credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }] });
    const both = await createSession(server, { ...HEADLESS, identities: [{ id: aliceHere.body.id }, { id: bobThere.body.id }] });
    expect((await progressOf(both.id)).map((p: any) => p.status)).toEqual(['authenticated', 'authenticated']);
    expect(await signedInAs(site, both)).toBe('alice');
    expect(await signedInAs({ ...site, url: local }, both)).toBe('bob');
    await endSession(server, both.id);
    for (const id of [aliceHere.body.id, bobThere.body.id]) {
      await eventually(async () => (await api('GET', `/v1/profiles/identity-${id}`)).body?.data?.status === 'ready', 30_000, `the profile of ${id}`);
    }
  });

  it('a wrong password fails as invalid_credentials; a login that needs a human asks one (an intervention), and fails as automation_failure when no one answers; the session is answered, not signed in', { timeout: 180_000 }, async () => {
    const wrong = await api('POST', '/v1/identities', {
      source: `${site.url}/login/one-page`,
      credentials: [{ type: 'username_password', username: 'alice', password: 'not-her-password' }],
    });
    const s = await sessionWith(wrong.body.id);
    const [p] = await progressOf(s.id);
    expect(p).toEqual({ id: wrong.body.id, status: 'failed', execution_id: expect.any(String), failure_type: 'invalid_credentials', error_message: expect.stringMatching(/refused the credentials.*Invalid username or password/) });
    expect(await signedInAs(site, s)).toBeNull();
    expect((await api('GET', `/v1/identities/${wrong.body.id}`)).body.status).toBe('failed');
    const [event] = await identityEvents(wrong.body.id);
    expect(event).toMatchObject({
      type: 'identity.authentication_failed',
      data: { identity_id: wrong.body.id, execution_id: p.execution_id, failure_type: 'invalid_credentials', error_message: p.error_message },
    });
    await endSession(server, s.id);

    // A site that repeats the password in its error: the record does not.
    const echoApp = await api('POST', '/v1/applications', { source: `${site.url}/login/echo` });
    const echo = await api('POST', '/v1/identities', { source: `${site.url}/login/echo`, credentials: [{ type: 'username_password', username: 'someone', password: 'echoed-Secret-9f2' }] });
    expect(echo.body.application_id).toBe(echoApp.body.id);
    const e = await sessionWith(echo.body.id);
    const [echoed] = await progressOf(e.id);
    expect(echoed).toMatchObject({ status: 'failed', failure_type: 'invalid_credentials', error_message: expect.stringContaining('Wrong password [redacted]') });
    expect(JSON.stringify(await identityEvents(echo.body.id))).not.toContain('echoed-Secret-9f2');
    await endSession(server, e.id);

    // A captcha on the login page: a human is needed.
    const app = await api('POST', '/v1/applications', { source: `${site.url}/login/captcha` });
    await api('POST', `/v1/applications/${app.body.id}/auth-flows`, { name: 'Captcha', methods: ['username_password'], login: { timeout_seconds: 3 } });
    const captcha = await api('POST', '/v1/identities', { source: `${site.url}/login/captcha`, credentials: [{ type: 'username_password', username: 'alice', password: 'x' }] });
    const c = await sessionWith(captcha.body.id);
    expect((await progressOf(c.id))[0]).toMatchObject({ status: 'failed', failure_type: 'automation_failure', error_message: expect.stringMatching(/captcha and needs a human: No one answered the request for a person within 3 s/) });
    await endSession(server, c.id);

    // A code is asked for and the identity has no authenticator secret: a person is asked
    // (an intervention, answered here through the API with the code of bob's authenticator).
    const codeApp = await api('POST', '/v1/applications', { source: `${site.url}/login/two-page?code-by-hand` });
    await api('POST', `/v1/applications/${codeApp.body.id}/auth-flows`, { name: 'Two pages', methods: ['username_password', 'authenticator'], login: { kind: 'two_pages' } });
    const twoPage = await api('POST', '/v1/identities', { source: `${site.url}/login/two-page?code-by-hand`, credentials: [{ type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password }] });
    const t = await sessionWith(twoPage.body.id, { authenticate_in_background: true });
    const asked = await eventually(async () => (await api('GET', `/v1/sessions/${t.id}/agent/requested-human-intervention`)).body?.data?.requests?.[0], 60_000, 'the request for the code');
    expect(asked).toMatchObject({ input_type: 'otp', message: expect.stringMatching(/one-time code and the identity has no authenticator secret/) });
    const code = await generate({ secret: LOGIN_USERS.bob.totpSecret, guardrails: createGuardrails({ MIN_SECRET_BYTES: 1 }) });
    expect((await api('POST', `/v1/sessions/${t.id}/agent/respond-to-human-intervention`, { requestId: asked.request_id, response: code })).status).toBe(200);
    const answered = await eventually(async () => {
      const [p] = await progressOf(t.id);
      return p.status === 'authenticating' ? undefined : p;
    }, 60_000, 'the login after the answer');
    expect(answered).toMatchObject({ status: 'authenticated' });
    expect(await signedInAs(site, t)).toBe('bob');
    await endSession(server, t.id);
  });

  it('authenticate_in_background answers at once and shows the progress on the session record; validateAsync=false signs in before the answer', { timeout: 180_000 }, async () => {
    const alice = await api('POST', '/v1/identities', {
      source: `${site.url}/login/one-page`,
      credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
    });
    const s = await sessionWith(alice.body.id, { authenticate_in_background: true });
    // Answered before the login finished.
    expect(await progressOf(s.id)).toEqual([{ id: alice.body.id, status: 'authenticating' }]);
    const done = await eventually(async () => {
      const [p] = await progressOf(s.id);
      return p.status === 'authenticating' ? undefined : p;
    }, 60_000, 'the background login');
    expect(done).toMatchObject({ status: 'authenticated' });
    expect(await signedInAs(site, s)).toBe('alice');
    await endSession(server, s.id);

    const validated = await api('POST', '/v1/identities?validateAsync=false', {
      source: `${site.url}/login/one-page`,
      credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
    });
    expect(validated).toMatchObject({ status: 201, body: { status: 'active' } });
    const refused = await api('POST', '/v1/identities?validateAsync=false', {
      source: `${site.url}/login/one-page`,
      credentials: [{ type: 'username_password', username: 'alice', password: 'wrong' }],
    });
    expect(refused).toMatchObject({ status: 201, body: { status: 'failed' } });
    // Its saved state is there for the next session.
    const profile = await eventually(async () => {
      const p = (await api('GET', `/v1/profiles/identity-${validated.body.id}`)).body?.data;
      return p?.status === 'ready' ? p : undefined;
    }, 30_000, 'the validated identity profile');
    expect(profile.status).toBe('ready');
  });

  it('refuses unknown identities and identities with browser.profile; a login a killed server left unfinished is failed; no secret in any log; no browser left', async () => {
    const unknown = await call(server, 'POST', '/v1/sessions', { ...HEADLESS, identities: [{ id: '00000000-0000-4000-8000-000000000000' }] });
    expect(unknown).toMatchObject({ status: 400, body: { error: { message: 'Unknown identity: 00000000-0000-4000-8000-000000000000' } } });
    const alice = await api('POST', '/v1/identities', { source: `${site.url}/login/one-page` });
    const both = await call(server, 'POST', '/v1/sessions', { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'x', persist: true } }, identities: [{ id: alice.body.id }] });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/browser.profile cannot be combined with identities/);

    // A login a killed server left unfinished on an ended session: failed at the next start.
    const [ended] = await server.db.query<{ id: string }>(`SELECT id FROM sessions WHERE identities IS NOT NULL AND status = 'completed' LIMIT 1`);
    await server.db.query(`UPDATE sessions SET identities = $2::jsonb WHERE id = $1`, [ended!.id, JSON.stringify([{ id: alice.body.id, status: 'authenticating' }])]);
    expect(await failInterrupted(server.db)).toBe(1);
    const [after] = await server.db.query<{ identities: unknown }>('SELECT identities FROM sessions WHERE id = $1', [ended!.id]);
    expect(after!.identities).toEqual([
      { id: alice.body.id, status: 'failed', failure_type: 'automation_failure', error_message: 'The server stopped before the login finished' },
    ]);
    expect(await failInterrupted(server.db)).toBe(0);

    expect(logs.some((l) => l.includes('identity signed in'))).toBe(true);
    for (const line of logs) {
      for (const secret of [LOGIN_USERS.alice.password, LOGIN_USERS.bob.password, LOGIN_USERS.bob.totpSecret, 'echoed-Secret-9f2']) expect(line).not.toContain(secret);
    }
    await eventually(() => processesUnder(browsersDirFor(server.dataDir)).length === 0, 20_000, 'no browser process left');
  });
});
