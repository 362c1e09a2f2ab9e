// The node's limits on session creation, each on a server of its own: MAX_CONCURRENT_BROWSERS
// (429 past it, a slot freed by an end) and SESSION_CREATE_RATE_PER_MINUTE (429 with
// Retry-After, per API key). A cluster's limits are in cluster-limits.test.ts.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startTestServer } from '../testing/harness.js';
import { createProject } from '../auth/api-keys.js';
import { HEADLESS, browsersDirFor, createSession, endSession, entries, postSession, processesUnder } from './test-support.js';

describe('limits', () => {
  it('MAX_CONCURRENT_BROWSERS: past it 429 with the general body, also for concurrent requests; a slot frees when a session ends', async () => {
    const server = await startTestServer({ env: { MAX_CONCURRENT_BROWSERS: '2' } });
    try {
      const results = await Promise.all([1, 2, 3].map(() => postSession(server, HEADLESS)));
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status !== 200);
      expect(ok).toHaveLength(2);
      expect(refused.map((r) => r.status)).toEqual([429]);
      expect(refused[0]!.body).toEqual({ error: { code: 429, message: expect.stringMatching(/concurrent browser limit/i) } });
      expect(processesUnder(browsersDirFor(server.config.dataDir)).length).toBeGreaterThan(0);
      expect(entries(browsersDirFor(server.config.dataDir)).filter((n) => n.startsWith('s-'))).toHaveLength(2);

      await endSession(server, ok[0]!.body.data.id);
      const again = await postSession(server, HEADLESS);
      expect(again.status).toBe(200);
      await Promise.all([ok[1]!.body.data.id, again.body.data.id].map((id) => endSession(server, id)));
    } finally {
      await server.close();
    }
  });

  it('SESSION_CREATE_RATE_PER_MINUTE: past it 429 "Session creation rate limit exceeded" with Retry-After, per API key', async () => {
    const server = await startTestServer({ env: { SESSION_CREATE_RATE_PER_MINUTE: '2' } });
    try {
      // Refused input does not spend the allowance.
      expect((await postSession(server, { browser: { captcha_solver: { active: true } } })).status).toBe(400);
      const a = await createSession(server, HEADLESS);
      const b = await createSession(server, HEADLESS);
      const third = await postSession(server, HEADLESS);
      expect(third.status).toBe(429);
      expect(third.body).toEqual({ error: { code: 429, message: 'Session creation rate limit exceeded' } });
      const retryAfter = Number(third.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Another key has its own allowance.
      const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
      const otherKey = other.key!;
      const c = await postSession(
        {
          request: (p, init = {}) => fetch(server.url + p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': otherKey } }),
        },
        HEADLESS,
      );
      expect(c.status).toBe(200);
      await Promise.all([a.id, b.id].map((id) => endSession(server, id)));
      await fetch(`${server.url}/v1/sessions/${c.body.data.id}`, { method: 'DELETE', headers: { 'service-api-key': otherKey } });
    } finally {
      await server.close();
    }
  });
});
