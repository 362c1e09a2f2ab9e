// Logins of other shapes, end to end (real Chromium, the fixture login apps over real HTTP):
// two pages and a TOTP code, by the ready-made kind and by a custom step list; an account
// chooser; two identities of two web apps in one session, both saved when it ends. Beside
// sign-in.test.ts.
import { describe, expect, it } from 'vitest';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { browserBackends } from '../testing/harness.js';
import { browsersDirFor, createSession, endSession, eventually, HEADLESS, processesUnder } from '../sessions/test-support.js';
import { SIGN_IN_SECRETS, signedInAs, signInBench } from './test-support.js';

describe.each(browserBackends)('sessions with identities on %s', (backend) => {
  const bench = signInBench(backend);
  const { logs, api, identityEvents, sessionWith, progressOf } = bench;

  it('two pages and a TOTP code, by the ready-made kind and by a custom step list; an account chooser', { timeout: 180_000 }, async () => {
    const app = await api('POST', '/v1/applications', { source: `${bench.site.url}/login/two-page`, name: 'Two pages' });
    const flow = await api('POST', `/v1/applications/${app.body.id}/auth-flows`, {
      name: 'Password then code',
      methods: ['username_password', 'authenticator'],
      is_recommended: true,
      login: { kind: 'two_pages', success: { selector: '#signed-in' } },
    });
    expect(flow.status).toBe(201);
    const bob = await api('POST', '/v1/identities', {
      source: `${bench.site.url}/login/two-page`,
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
      ],
    });
    expect(bob.body.application_id).toBe(app.body.id);
    const s = await sessionWith(bob.body.id);
    expect(await progressOf(s.id)).toEqual([{ id: bob.body.id, status: 'authenticated', execution_id: expect.any(String) }]);
    expect(await signedInAs(bench.site, s)).toBe('bob');
    await endSession(bench.server, s.id);

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
    expect(await signedInAs(bench.site, again)).toBe('bob');
    await endSession(bench.server, again.id);

    // An account chooser first, then the password of the chosen account.
    const chooser = await api('POST', '/v1/applications', { source: `${bench.site.url}/login/choose`, name: 'Chooser' });
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
      source: `${bench.site.url}/login/choose`,
      credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
    });
    expect(chosen.body.application_id).toBe(chooser.body.id);
    const c = await sessionWith(chosen.body.id);
    expect(await progressOf(c.id)).toMatchObject([{ status: 'authenticated' }]);
    expect(await signedInAs(bench.site, c)).toBe('alice');
    await endSession(bench.server, c.id);

    // Two identities of two web apps (two hosts) in one session: both sign in, and the
    // session's end saves the state into both identities' profiles.
    const local = bench.site.url.replace('127.0.0.1', 'localhost');
    const localApp = await api('POST', '/v1/applications', { source: `${local}/login/two-page` });
    await api('POST', `/v1/applications/${localApp.body.id}/auth-flows`, {
      name: 'Two pages',
      methods: ['username_password', 'authenticator'],
      login: { kind: 'two_pages' },
    });
    const bobThere = await api('POST', '/v1/identities', {
      source: `${local}/login/two-page`,
      credentials: [
        { type: 'username_password', username: 'bob', password: LOGIN_USERS.bob.password },
        { type: 'authenticator', secret: LOGIN_USERS.bob.totpSecret },
      ],
    });
    // Its own application (an identity otherwise joins the oldest one of its origin).
    await api('POST', '/v1/applications', { source: `${bench.site.url}/login/one-page` });
    const aliceHere = await api('POST', '/v1/identities', {
      source: `${bench.site.url}/login/one-page`,
      credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
    });
    const both = await createSession(bench.server, { ...HEADLESS, identities: [{ id: aliceHere.body.id }, { id: bobThere.body.id }] });
    expect((await progressOf(both.id)).map((p: any) => p.status)).toEqual(['authenticated', 'authenticated']);
    expect(await signedInAs(bench.site, both)).toBe('alice');
    expect(await signedInAs({ ...bench.site, url: local }, both)).toBe('bob');
    await endSession(bench.server, both.id);
    for (const id of [aliceHere.body.id, bobThere.body.id]) {
      await eventually(async () => (await api('GET', `/v1/profiles/identity-${id}`)).body?.data?.status === 'ready', 30_000, `the profile of ${id}`);
    }
    // No secret of this file's logins in any log line; no browser left.
    for (const line of logs) for (const secret of SIGN_IN_SECRETS) expect(line).not.toContain(secret);
    await eventually(() => processesUnder(browsersDirFor(bench.server.dataDir)).length === 0, 20_000, 'no browser process left');
  });
});
