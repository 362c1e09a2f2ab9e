// Profiles end to end over real HTTP and real Chromium: a session signs in to the fixture
// site through Playwright over cdp_url (a session cookie, a persistent cookie, local storage
// and IndexedDB), a profile is made from it, the session ends, and a new session with the
// profile is still signed in. Around that: the refusals, project scoping, deletion while in
// use, and the listing. The ends a profile is saved or failed on are in saves.test.ts,
// idle-timeout.test.ts (a minute of waiting) and shutdown.test.ts (the server's stop).
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { HEADLESS, browsersDirFor, createSession, endSession, eventually, postSession, processesUnder, type Requester } from '../sessions/test-support.js';
import { SIGNED_IN, call, makeProfile, profile, settled, signIn, startPageServer, stateOf, type PageServer } from './test-support.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => {
  await pages?.close();
});

describe.each(browserBackends)('profiles on %s', (backend) => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ backend });
  });
  afterAll(async () => {
    await server?.close();
  });

  it(
    'a profile made from a signed-in session keeps the sign-in (session cookie, persistent cookie, local storage, IndexedDB) for the next session',
    { timeout: 180_000 },
    async () => {
      // Headful (the default), the next one headless: the state does not depend on the mode.
      const first = await createSession(server, { session: { recording: { active: false } } });
      await signIn(pages, first.cdp_url);
      const made = await makeProfile(server, 'shop', first.id, { description: 'Signed in as the test buyer.' });
      expect(made).toEqual({ status: 200, body: { data: { status: 'pending' } } });
      expect(await profile(server, 'shop')).toEqual({
        name: 'shop',
        description: 'Signed in as the test buyer.',
        status: 'pending',
        source: 'session',
        session_id: first.id,
        dedicated_sticky_ip: false,
        size_bytes: null,
        failure_reason: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      // Refusals: the name taken, a session unknown or of another project, a pending profile.
      expect(await makeProfile(server, 'shop', first.id)).toEqual({
        status: 409,
        body: { error: { code: 409, message: 'A profile named shop already exists' } },
      });
      expect((await makeProfile(server, 'other', randomUUID())).body.error.message).toBe('Session not found');
      // A sticky IP needs the operator's service proxy pool, which this server has not.
      expect((await makeProfile(server, 'sticky', first.id, { dedicated_sticky_ip: true })).body.error.message).toMatch(
        /^dedicated_sticky_ip: this server has no service proxy pool/,
      );
      const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
      const asOther: Requester = {
        request: (p, init = {}) => server.request(p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': other.key } }),
      };
      expect((await makeProfile(asOther, 'theirs', first.id)).body.error.message).toBe('Session not found');
      expect((await call(asOther, 'GET', '/v1/profiles/shop')).status).toBe(404);
      expect((await call(asOther, 'DELETE', '/v1/profiles/shop')).status).toBe(404);
      const early = await postSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'shop' } } });
      expect(early.status).toBe(400);
      expect(early.body.error.message).toMatch(/Profile shop is pending/);
      expect((await postSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'nobody' } } })).body.error.message).toBe(
        'Unknown profile: nobody',
      );

      expect((await endSession(server, first.id)).status).toBe(200);
      // Ended through DELETE, a session is gone from the API.
      expect((await makeProfile(server, 'late', first.id)).body.error.message).toBe('Session not found');
      const ready = await settled(server, 'shop');
      expect(ready).toMatchObject({ status: 'ready', failure_reason: null });
      expect(ready.size_bytes).toBeGreaterThan(1000);
      // Nothing staged is left beside the roots once saved.
      expect(readdirSync(browsersDirFor(server.dataDir)).filter((n) => n.startsWith('.profile-save-'))).toEqual([]);

      const second = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'shop' } } });
      // Signed in, only the one tab (a profile restores state, not the tabs it was saved with),
      // and the viewport asked for (the default).
      expect(await stateOf(pages, second.cdp_url)).toEqual({ ...SIGNED_IN, extra: null, tabs: 1, viewport: [1440, 900] });

      // The node unpacked that version once, for the sessions to copy.
      const cache = join(server.dataDir, 'profile-cache');
      expect(readdirSync(cache)).toHaveLength(1);

      // Deleted while a session uses it: the session keeps its copy; the node's unpacked one goes.
      expect(await call(server, 'DELETE', '/v1/profiles/shop')).toEqual({ status: 200, body: { data: { status: 'deleted' } } });
      await eventually(() => readdirSync(cache).length === 0, 5_000, 'the unpacked copy to go');
      expect((await call(server, 'GET', '/v1/profiles/shop')).status).toBe(404);
      expect(await stateOf(pages, second.cdp_url)).toMatchObject(SIGNED_IN);
      await endSession(server, second.id);
    },
  );

  it("without source and session_id (the vendor's source is optional) makes an empty profile: ready, a session starts fresh with it and persists into it", async () => {
    const made = await call(server, 'POST', '/v1/profiles', { name: 'blank', description: 'Filled by the first session' });
    expect(made).toEqual({ status: 200, body: { data: { status: 'ready' } } });
    expect(await profile(server, 'blank')).toMatchObject({ name: 'blank', status: 'ready', source: null, session_id: null, size_bytes: null });
    expect((await call(server, 'POST', '/v1/profiles', { name: 'blank' })).status).toBe(409);
    // source session still needs its session.
    expect((await call(server, 'POST', '/v1/profiles', { name: 'nosession', source: 'session' })).status).toBe(400);

    const first = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'blank', persist: true } } });
    expect(await stateOf(pages, first.cdp_url)).toMatchObject({ user: null, cart: null, extra: null });
    await signIn(pages, first.cdp_url);
    await endSession(server, first.id);
    const saved = await eventually(async () => ((await profile(server, 'blank'))?.size_bytes ? profile(server, 'blank') : undefined), 30_000, 'the save');
    expect(saved).toMatchObject({ status: 'ready', source: null });

    const second = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'blank' } } });
    expect(await stateOf(pages, second.cdp_url)).toMatchObject(SIGNED_IN);
    await endSession(server, second.id);
  });

  it('lists a page at a time, newest first, with the count of all', async () => {
    const s = await createSession(server, HEADLESS);
    for (const name of ['page-a', 'page-b', 'page-c']) expect((await makeProfile(server, name, s.id)).status).toBe(200);
    const all = (await call(server, 'GET', '/v1/profiles')).body.data;
    const names = all.items.map((p: { name: string }) => p.name);
    expect(names.slice(0, 3)).toEqual(['page-c', 'page-b', 'page-a']);
    expect(all.count).toBe(all.items.length);
    const second = (await call(server, 'GET', '/v1/profiles?page=2&limit=2')).body.data;
    expect(second.count).toBe(all.count);
    expect(second.items.map((p: { name: string }) => p.name)).toEqual(names.slice(2, 4));
    expect((await call(server, 'GET', '/v1/profiles?limit=0')).status).toBe(400);
    // One session's end saves all three.
    await endSession(server, s.id);
    for (const name of ['page-a', 'page-b', 'page-c']) expect(await settled(server, name)).toMatchObject({ status: 'ready' });
    const rows = await server.db.query<{ storage_key: string }>(`SELECT storage_key FROM profiles WHERE name LIKE 'page-%'`);
    expect(new Set(rows.map((r) => r.storage_key)).size).toBe(3);
    // Every session of this file has ended: no browser process, root or staged folder is left.
    const browsersDir = browsersDirFor(server.dataDir);
    await eventually(() => processesUnder(browsersDir).length === 0, 10_000, 'no browser process left');
    expect(readdirSync(browsersDir)).toEqual([]);
  });
});
