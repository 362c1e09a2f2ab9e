// Profiles across the server's stop, on a child process of the real server: a graceful stop
// (SIGTERM) saves the profile of a running session; a kill -9 leaves it failed at the next
// start, with nothing staged left. Beside profiles.test.ts.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { HEADLESS, browsersDirFor, createSession } from '../sessions/test-support.js';
import { SIGNED_IN, makeProfile, profile, signIn, startPageServer, stateOf, type PageServer } from './test-support.js';

let pages: PageServer;
beforeAll(async () => {
  pages = await startPageServer();
});
afterAll(async () => {
  await pages?.close();
});

describe("profiles across the server's stop", () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'cb-test-profiles-'));
  const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });
  const start = async () => {
    const c = await startChildServer({ dataDir, apiKey });
    children.push(c);
    return c;
  };

  it(
    'a graceful stop saves the profile of a running session; a kill -9 leaves it failed at the next start, with nothing staged left',
    { timeout: 120_000 },
    async () => {
      const first = await start();
      const s = await createSession(first, HEADLESS);
      await signIn(pages, s.cdp_url);
      expect((await makeProfile(first, 'at-shutdown', s.id)).status).toBe(200);
      first.child.kill('SIGTERM');
      expect((await first.exited).code).toBe(0);

      const second = await start();
      expect(await profile(second, 'at-shutdown')).toMatchObject({ status: 'ready' });
      const resumed = await createSession(second, { ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'at-shutdown' } } });
      expect(await stateOf(pages, resumed.cdp_url)).toMatchObject(SIGNED_IN);
      expect((await makeProfile(second, 'at-kill', resumed.id)).status).toBe(200);
      second.child.kill('SIGKILL');
      await second.exited;

      const third = await start();
      const failed = await profile(third, 'at-kill');
      expect(failed).toMatchObject({ status: 'failed', failure_reason: "The server stopped before the session's state was saved" });
      // The profile it was loaded from is untouched.
      expect(await profile(third, 'at-shutdown')).toMatchObject({ status: 'ready' });
      third.child.kill('SIGTERM');
      await third.exited;
      expect(existsSync(browsersDirFor(dataDir))).toBe(false);
    },
  );
});
