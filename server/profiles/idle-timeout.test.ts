// A session that ends by idle time-out saves its profile. A file of its own, beside
// profiles.test.ts: the contract's idle_timeout is whole minutes, so this test waits a real
// minute for the server's own timer while other files run beside it.
import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { HEADLESS, browsersDirFor, createSession, endSession, eventually, headless, processesUnder } from '../sessions/test-support.js';
import { SIGNED_IN, makeProfile, profile, signIn, startPageServer, stateOf, type PageServer } from './test-support.js';

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
    // A session that ends by idle time-out (a whole minute); the test looks at its profile.
    const idle = await createSession(server, headless({ timeout: { idle_timeout: 1 } }));
    await signIn(pages, idle.cdp_url);
    expect((await makeProfile(server, 'by-idle', idle.id)).status).toBe(200);
  });
  afterAll(async () => {
    await server?.close();
  });

  // A minute of waiting for the time-out (idle).
  it('a session that ends by idle time-out saves its profile', { timeout: 120_000 }, async () => {
    const saved = await eventually(
      async () => {
        const p = await profile(server, 'by-idle');
        return p.status !== 'pending' ? p : undefined;
      },
      90_000,
      'the idle session to end and its profile to be saved',
    );
    expect(saved).toMatchObject({ status: 'ready' });
    const s = await createSession(server, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'by-idle' } } });
    expect(await stateOf(pages, s.cdp_url)).toMatchObject(SIGNED_IN);
    await endSession(server, s.id);
    // Every session of this file has ended: no browser process, root or staged folder is left.
    const browsersDir = browsersDirFor(server.dataDir);
    await eventually(() => processesUnder(browsersDir).length === 0, 10_000, 'no browser process left');
    expect(readdirSync(browsersDir)).toEqual([]);
  });
});
