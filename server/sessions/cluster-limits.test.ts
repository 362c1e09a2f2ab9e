// Limits that must hold across the nodes of one database: two real servers (in-process,
// real HTTP, real Chromium) share one PostgreSQL schema, as two nodes of a cluster do. Each
// server's memory counts only its own requests, so these pass only when the count lives in
// the database (or Redis): the per-key session-creation and web-fetch rate limits, and the
// per-project concurrent-browser cap raced from both servers; and credits, which are sums
// over the database's ledger, charged on either node and refused on both.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { sharedPostgresSchema, startTestServer, type TestServer } from '../testing/harness.js';
import { deleteKeys, redisAnswers, TEST_REDIS_URL, testKeyPrefix } from '../testing/redis.js';

const onPostgres = Boolean(process.env.DATABASE_URL);
if (!onPostgres) console.warn('cluster limits: skipped, several nodes need PostgreSQL and DATABASE_URL is not set');
const redisUp = onPostgres && (await redisAnswers('cluster limits: Redis'));

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };

/** A request to one node with the cluster's key. */
function send(node: TestServer, key: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(node.url + path, {
    method,
    headers: { 'service-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Two nodes on one fresh schema, the second started with the first's key. */
async function twoNodes(env: Record<string, string>) {
  const schema = await sharedPostgresSchema();
  // Every node of one database shares the key that seals its secrets.
  const shared = { ...env, SECRETS_KEY: randomBytes(32).toString('hex') };
  const a = await startTestServer({ databaseUrl: schema.url, env: shared }).catch(async (err) => {
    await schema.drop();
    throw err;
  });
  const b = await startTestServer({ databaseUrl: schema.url, env: { ...shared, BOOTSTRAP_API_KEY: a.apiKey } }).catch(async (err) => {
    await a.close();
    await schema.drop();
    throw err;
  });
  return {
    a,
    b,
    key: a.apiKey,
    async close() {
      await Promise.all([a.close(), b.close()]);
      await schema.drop();
    },
  };
}

async function expectRateLimited(res: Response) {
  expect(res.status).toBe(429);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  return res.json();
}

for (const store of ['PostgreSQL', 'Redis'] as const) {
  describe.skipIf(!onPostgres || (store === 'Redis' && !redisUp))(`rate limits across two nodes, counted in ${store}`, () => {
    let fx: FixtureServer;
    let nodes: Awaited<ReturnType<typeof twoNodes>>;
    const prefix = testKeyPrefix();

    beforeAll(async () => {
      fx = await startFixtureServer();
      nodes = await twoNodes({
        SESSION_CREATE_RATE_PER_MINUTE: '2',
        FETCH_RATE_PER_MINUTE: '2',
        FETCH_BROWSERS: '1',
        // Two web fetches (0.005 credits each) and the seconds of two sessions pass it.
        COST_LIMIT: '0.01',
        ...(store === 'Redis' ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix } : {}),
      });
    }, 60_000);

    afterAll(async () => {
      await nodes?.close();
      await fx?.close();
      if (store === 'Redis') await deleteKeys(prefix);
    });

    it('a key limited to 2 creations a minute gets 2 across both nodes, then 429 with Retry-After on either', async () => {
      const { a, b, key } = nodes;
      const first = await send(a, key, 'POST', '/v1/sessions', HEADLESS);
      expect(first.status, await first.clone().text()).toBe(200);
      const second = await send(b, key, 'POST', '/v1/sessions', HEADLESS);
      expect(second.status, await second.clone().text()).toBe(200);
      expect(await expectRateLimited(await send(a, key, 'POST', '/v1/sessions', HEADLESS))).toEqual({
        error: { code: 429, message: 'Session creation rate limit exceeded' },
      });
      await expectRateLimited(await send(b, key, 'POST', '/v1/sessions', HEADLESS));
      const ids = [(await first.json()).data.id, (await second.json()).data.id];
      // Each node ends its own session.
      expect((await send(a, key, 'DELETE', `/v1/sessions/${ids[0]}`)).status).toBe(200);
      expect((await send(b, key, 'DELETE', `/v1/sessions/${ids[1]}`)).status).toBe(200);
    });

    it('the same for the web fetch tool', async () => {
      const { a, b, key } = nodes;
      const url = `${fx.url}/site/script-rendered.html`;
      expect((await send(a, key, 'POST', '/v1/tools/fetch/webpage', { url })).status).toBe(200);
      expect((await send(b, key, 'POST', '/v1/tools/fetch/webpage', { url })).status).toBe(200);
      await expectRateLimited(await send(b, key, 'POST', '/v1/tools/fetch/webpage', { url }));
      await expectRateLimited(await send(a, key, 'POST', '/v1/tools/fetch/webpage', { url }));
    });

    it('credits hold across nodes: what either charged counts on both, and a cost limit reached through both refuses on either', async () => {
      const { a, b, key } = nodes;
      // After the two tests above: two fetches, one on each node, and two short sessions.
      const billing = await Promise.all([a, b].map(async (n) => (await (await send(n, key, 'GET', '/v1/billing')).json()).data));
      expect(billing[0].credits_used).toBeGreaterThanOrEqual(0.01);
      expect(billing[1]).toEqual(billing[0]);
      for (const n of [a, b]) {
        const res = await send(n, key, 'POST', '/v1/sessions', HEADLESS);
        expect(res.status).toBe(402);
        expect((await res.json()).error.message).toMatch(/reached the cost limit of 0.01/);
      }
    });
  });
}

describe.skipIf(!onPostgres)("a project's concurrent-browser cap raced from two nodes", () => {
  const ADMIN_TOKEN = 'admin-token-for-the-cluster-cap-test-0123456789';
  let nodes: Awaited<ReturnType<typeof twoNodes>>;

  beforeAll(async () => {
    nodes = await twoNodes({ ADMIN_TOKEN, MAX_CONCURRENT_BROWSERS: '4' });
  }, 60_000);
  afterAll(() => nodes?.close());

  it('is never exceeded: of 6 creations at once, 3 on each node, 2 start and 4 answer 429', async () => {
    const { a, b } = nodes;
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const project = await (
      await fetch(`${a.url}/admin/v1/projects`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'capped', max_concurrent_browsers: 2 }) })
    ).json();
    const key = (await (await fetch(`${b.url}/admin/v1/projects/${project.data.id}/keys`, { method: 'POST', headers: admin })).json()).data.key as string;

    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => send(i % 2 ? b : a, key, 'POST', '/v1/sessions', HEADLESS)));
    const started = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    expect(started).toHaveLength(2);
    expect(refused).toHaveLength(4);
    for (const r of refused) expect((await r.json()).error.message).toMatch(/project's concurrent browser limit is reached \(2\)/);
    const [{ n }] = await a.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM sessions WHERE project_id = $1 AND status IN ('starting', 'running')`, [
      project.data.id,
    ]);
    expect(n).toBe(2);
    for (const r of started) {
      const id = (await r.json()).data.id;
      // Either node ends it: the owner's through its own manager, the other's answer is what
      // the routing work makes of it; here each id is ended where it was made.
      const owner = answers.indexOf(r) % 2 ? b : a;
      expect((await send(owner, key, 'DELETE', `/v1/sessions/${id}`)).status).toBe(200);
    }
  });
});
