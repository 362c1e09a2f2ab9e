// Sessions that arrive signed in, end to end: real Chromium, the fixture login apps over
// real HTTP, Playwright over cdp_url to see what the user sees. A pending identity signs in
// before the answer; its state is saved as its profile when the session ends, and the next
// session reuses it (and, when asked to validate, signs in again once the site has ended
// the sign-in). The background mode, validateAsync=false; the refusals, a login a killed
// server left unfinished; the events against their schemas; no secret in any log; nothing
// of a browser left behind. Other logins are in login-flows.test.ts, the failed ones in
// sign-in-failures.test.ts.
import { describe, expect, it } from 'vitest';
import { LOGIN_USERS } from '../../fixtures/login-app.js';
import { browserBackends } from '../testing/harness.js';
import { browsersDirFor, endSession, eventually, HEADLESS, processesUnder } from '../sessions/test-support.js';
import { failInterrupted } from './store.js';
import { call, signedInAs, signInBench } from './test-support.js';

describe.each(browserBackends)('sessions with identities on %s', (backend) => {
  const bench = signInBench(backend);
  const { logs, api, identityEvents, sessionWith, progressOf, loginSettled } = bench;

  it(
    'a pending identity signs in before the answer; its saved state signs the next session in; validation signs in again once the site ended it',
    { timeout: 240_000 },
    async () => {
      const alice = await api('POST', '/v1/identities', {
        name: 'Alice',
        source: `${bench.site.url}/login/one-page`,
        credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
      });
      expect(alice.status).toBe(201);
      const id = alice.body.id;

      const first = await sessionWith(id, { session: { recording: { active: false }, initial_url: `${bench.site.url}/app/home` } });
      // Answered signed in, on the page it asked for.
      expect(await signedInAs(bench.site, first)).toBe('alice');
      const [progress] = await progressOf(first.id);
      expect(progress).toEqual({ id, status: 'authenticated', execution_id: expect.any(String) });
      expect((await api('GET', `/v1/identities/${id}`)).body.status).toBe('active');
      const [event] = await identityEvents(id);
      expect(event).toMatchObject({
        type: 'identity.authenticated',
        data: { identity_id: id, application_id: alice.body.application_id, session_id: first.id, execution_id: progress.execution_id },
      });

      // Its end saves the state as the identity's profile.
      await endSession(bench.server, first.id);
      const saved = await eventually(
        async () => {
          const p = (await api('GET', `/v1/profiles/identity-${id}`)).body?.data;
          return p?.status === 'ready' ? p : undefined;
        },
        30_000,
        'the identity profile to be saved',
      );
      expect(saved.session_id).toBe(first.id);

      // Reused: no login, signed in all the same.
      const second = await sessionWith(id);
      expect(await progressOf(second.id)).toEqual([{ id, status: 'reused' }]);
      expect(await signedInAs(bench.site, second)).toBe('alice');
      await endSession(bench.server, second.id);
      // Validated while still signed in: reused.
      const checked = await sessionWith(id, { skip_profile_validation: false });
      expect(await progressOf(checked.id)).toEqual([{ id, status: 'reused' }]);
      await endSession(bench.server, checked.id);

      // The site ends alice's sign-ins: a reused profile is signed out. Validation notices,
      // and signs in again.
      await fetch(`${bench.site.url}/app/expire?user=alice`);
      const third = await sessionWith(id, { skip_profile_validation: false });
      expect(await progressOf(third.id)).toEqual([{ id, status: 'authenticated', execution_id: expect.any(String) }]);
      expect(await signedInAs(bench.site, third)).toBe('alice');
      await endSession(bench.server, third.id);
      expect((await identityEvents(id)).map((e) => e.type)).toEqual(['identity.authenticated', 'identity.authenticated']);

      // Deleting the identity deletes its profile.
      expect((await api('DELETE', `/v1/identities/${id}`)).status).toBe(200);
      expect((await api('GET', `/v1/profiles/identity-${id}`)).status).toBe(404);
    },
  );

  it(
    'authenticate_in_background answers at once and shows the progress on the session record; validateAsync=false signs in before the answer',
    { timeout: 180_000 },
    async () => {
      const alice = await api('POST', '/v1/identities', {
        source: `${bench.site.url}/login/one-page`,
        credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
      });
      const s = await sessionWith(alice.body.id, { authenticate_in_background: true });
      // Answered before the login finished.
      expect(await progressOf(s.id)).toEqual([{ id: alice.body.id, status: 'authenticating' }]);
      const done = await loginSettled(s.id, 60_000);
      expect(done).toMatchObject({ status: 'authenticated' });
      expect(await signedInAs(bench.site, s)).toBe('alice');
      await endSession(bench.server, s.id);

      const validated = await api('POST', '/v1/identities?validateAsync=false', {
        source: `${bench.site.url}/login/one-page`,
        credentials: [{ type: 'username_password', username: 'alice', password: LOGIN_USERS.alice.password }],
      });
      expect(validated).toMatchObject({ status: 201, body: { status: 'active' } });
      const refused = await api('POST', '/v1/identities?validateAsync=false', {
        source: `${bench.site.url}/login/one-page`,
        credentials: [{ type: 'username_password', username: 'alice', password: 'wrong' }],
      });
      expect(refused).toMatchObject({ status: 201, body: { status: 'failed' } });
      // Its saved state is there for the next session.
      const profile = await eventually(
        async () => {
          const p = (await api('GET', `/v1/profiles/identity-${validated.body.id}`)).body?.data;
          return p?.status === 'ready' ? p : undefined;
        },
        30_000,
        'the validated identity profile',
      );
      expect(profile.status).toBe('ready');
    },
  );

  it('refuses unknown identities and identities with browser.profile; a login a killed server left unfinished is failed; no secret in any log; no browser left', async () => {
    const unknown = await call(bench.server, 'POST', '/v1/sessions', { ...HEADLESS, identities: [{ id: '00000000-0000-4000-8000-000000000000' }] });
    expect(unknown).toMatchObject({ status: 400, body: { error: { message: 'Unknown identity: 00000000-0000-4000-8000-000000000000' } } });
    const alice = await api('POST', '/v1/identities', { source: `${bench.site.url}/login/one-page` });
    const both = await call(bench.server, 'POST', '/v1/sessions', {
      ...HEADLESS,
      browser: { ...HEADLESS.browser, profile: { name: 'x', persist: true } },
      identities: [{ id: alice.body.id }],
    });
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/browser.profile cannot be combined with identities/);

    // A login a killed server left unfinished on an ended session: failed at the next start.
    const [ended] = await bench.server.db.query<{ id: string }>(`SELECT id FROM sessions WHERE identities IS NOT NULL AND status = 'completed' LIMIT 1`);
    await bench.server.db.query(`UPDATE sessions SET identities = $2::jsonb WHERE id = $1`, [
      ended!.id,
      JSON.stringify([{ id: alice.body.id, status: 'authenticating' }]),
    ]);
    expect(await failInterrupted(bench.server.db)).toBe(1);
    const [after] = await bench.server.db.query<{ identities: unknown }>('SELECT identities FROM sessions WHERE id = $1', [ended!.id]);
    expect(after!.identities).toEqual([
      { id: alice.body.id, status: 'failed', failure_type: 'automation_failure', error_message: 'The server stopped before the login finished' },
    ]);
    expect(await failInterrupted(bench.server.db)).toBe(0);

    expect(logs.some((l) => l.includes('identity signed in'))).toBe(true);
    for (const line of logs) {
      for (const secret of [LOGIN_USERS.alice.password, LOGIN_USERS.bob.password, LOGIN_USERS.bob.totpSecret, 'echoed-Secret-9f2'])
        expect(line).not.toContain(secret);
    }
    await eventually(() => processesUnder(browsersDirFor(bench.server.dataDir)).length === 0, 20_000, 'no browser process left');
  });
});
