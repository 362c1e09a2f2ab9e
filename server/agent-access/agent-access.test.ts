// Agent access over real HTTP, with no API key: the guide (A1), the whole flow to a working
// key (A2), refusals of wrong, reused and expired tokens (A3), and the per-address limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKey } from '../auth/api-keys.js';
import { compileSchema, createAjv, loadSpec } from '../http/spec.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
// Solved as an agent would, by the conformance suite's own solver.
import { solveArithmetic } from '../../conformance/arithmetic.js';

const spec = loadSpec();
const ajv = createAjv(spec);
const schema = (name: string) => compileSchema(ajv, { $ref: `#/components/schemas/${name}` });
const isGuide = schema('AgentAccessGuide');
const isChallenge = schema('AgentAccessChallenge');
const isSubmitted = schema('AgentAccessSubmitResponse');
const isError = schema('AgentAccessError');

function expectValid(validate: ReturnType<typeof schema>, body: unknown) {
  const ok = validate(body);
  expect(ok, JSON.stringify(validate.errors)).toBe(true);
}

/** Requests without any API key. */
function client(server: TestServer) {
  return {
    get: (path: string) => fetch(server.url + path),
    submit: (body: unknown) =>
      fetch(`${server.url}/v1/agent-access`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
    async challenge(): Promise<{ token: string; answer: string; body: any }> {
      const res = await fetch(`${server.url}/v1/agent-access/challenge`);
      expect(res.status).toBe(200);
      const body = await res.json();
      return { token: body.token, answer: solveArithmetic(body.challenge.prompt), body };
    },
  };
}

async function expectRefusal(res: Response, status: number, message: RegExp, docs: string) {
  expect(res.status).toBe(status);
  const body = await res.json();
  expectValid(isError, body);
  expect(body.error).toMatch(message);
  expect(body.docs).toBe(docs);
  return body;
}

const countKeys = async (server: TestServer) => (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM api_keys'))[0].n;

describe.each(backends)('agent access on %s', (backend) => {
  let server: TestServer;
  let docs: string;
  let c: ReturnType<typeof client>;
  beforeAll(async () => {
    server = await startTestServer({ backend });
    docs = `${server.config.publicUrl}/docs`;
    c = client(server);
  });
  afterAll(() => server?.close());

  it('A1 answers the guide with every documented field, needs no key and issues none', async () => {
    const keysBefore = await countKeys(server);
    const res = await c.get('/v1/agent-access');
    expect(res.status).toBe(200);
    const guide = await res.json();
    expectValid(isGuide, guide);
    expect(guide).toEqual({
      purpose: expect.stringMatching(/API key/),
      docs,
      credits: { anonymous: 5, with_identity: 25 },
      ttl_seconds: 300,
      limits: { session_max_duration_minutes: 15 },
      flow: [
        { step: 1, path: '/v1/agent-access/challenge', why: expect.any(String) },
        { step: 2, path: '/v1/agent-access', why: expect.stringMatching(/POST/) },
        { step: 3, path: '/v1/sessions', why: expect.stringMatching(/service-api-key/) },
      ],
      next: { path: '/v1/agent-access/challenge', description: expect.any(String) },
      identity: { optional: true, extra_credits: 20, submit: expect.any(String), oidc: [] },
    });
    expect(JSON.stringify(guide)).not.toMatch(/sk_/);
    expect(await countKeys(server)).toBe(keysBefore);
  });

  it('issues a challenge with a single expression, a token and its expiry', async () => {
    const before = Date.now();
    const { body } = await c.challenge();
    expectValid(isChallenge, body);
    expect(body.challenge).toMatchObject({ id: expect.stringMatching(/^chl_/), type: 'arithmetic' });
    expect(body.challenge.prompt).toMatch(/^What is \d+( [-+*] \d+)+\?/);
    expect(body.next).toEqual({ path: '/v1/agent-access', description: expect.any(String) });
    const expires = Date.parse(body.expires_at);
    expect(expires - before).toBeGreaterThan(290_000);
    expect(expires - before).toBeLessThan(310_000);
    // Neither the token nor the answer is stored as such.
    const rows = await server.db.query<Record<string, string>>('SELECT * FROM agent_access_challenges WHERE id = $1', [body.challenge.id]);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows[0])).not.toContain(body.token);
    expect(Object.values(rows[0])).not.toContain(solveArithmetic(body.challenge.prompt));
  });

  it('A2 challenge → answer → POST issues a key to a new project that works on /v1/sessions', async () => {
    const own = (await findKey(server.db, server.apiKey))!;
    const { token, answer } = await c.challenge();
    const res = await c.submit({ token, answer });
    expect(res.status).toBe(200);
    const body = await res.json();
    // project_id's uuid format has a test of its own below.
    expectValid(isSubmitted, { ...body, project_id: '2c4e6a8b-1d3f-4a5b-8c7d-9e0f1a2b3c4d' });
    expect(body).toEqual({
      api_key: expect.any(String),
      project_id: expect.any(String),
      credits_granted: 5,
      next: { path: '/v1/sessions', description: expect.any(String) },
    });
    expect(body.project_id).not.toBe(own.projectId);
    expect((await findKey(server.db, body.api_key))?.projectId).toBe(body.project_id);
    const [project] = await server.db.query<{ gift_credits: number; max_session_minutes: number }>(
      'SELECT gift_credits, max_session_minutes FROM projects WHERE id = $1',
      [body.project_id],
    );
    expect(project).toEqual({ gift_credits: 5, max_session_minutes: 15 });
    for (const path of ['/v1/sessions', '/v1/billing']) {
      const authed = await fetch(server.url + path, { headers: { 'service-api-key': body.api_key } });
      expect(authed.status, path).not.toBe(401);
    }
    // A second agent gets a second project.
    const again = await c.challenge();
    const second = await (await c.submit({ token: again.token, answer: again.answer })).json();
    expect(second.project_id).not.toBe(body.project_id);
    expect(second.api_key).not.toBe(body.api_key);
  });

  it('answers project_id as a uuid, as the contract says', async () => {
    const { token, answer } = await c.challenge();
    const body = await (await c.submit({ token, answer })).json();
    expectValid(isSubmitted, body);
  });

  it('A3 refuses a wrong answer with {error, next, docs}, and the token is spent', async () => {
    const keysBefore = await countKeys(server);
    const { token, answer } = await c.challenge();
    const wrong = await expectRefusal(await c.submit({ token, answer: String(Number(answer) + 1) }), 401, /^Wrong answer$/, docs);
    expect(wrong.next).toEqual({ path: '/v1/agent-access/challenge', description: expect.any(String) });
    await expectRefusal(await c.submit({ token, answer }), 401, /already used/, docs);
    await expectRefusal(await c.submit({ token, answer: 'not a number' }), 401, /already used/, docs);
    expect(await countKeys(server)).toBe(keysBefore);
  });

  it('A3 a token answers once, also after a right answer', async () => {
    const { token, answer } = await c.challenge();
    expect((await c.submit({ token, answer })).status).toBe(200);
    const keysAfter = await countKeys(server);
    await expectRefusal(await c.submit({ token, answer }), 401, /already used/, docs);
    expect(await countKeys(server)).toBe(keysAfter);
  });

  it('spends a token once under concurrent answers', async () => {
    const { token, answer } = await c.challenge();
    const results = await Promise.all(Array.from({ length: 5 }, () => c.submit({ token, answer })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 401, 401, 401, 401]);
  });

  it('refuses a token it never issued', async () => {
    await expectRefusal(await c.submit({ token: 'act_never-issued', answer: '1' }), 401, /^Invalid challenge token$/, docs);
  });

  it('refuses an identity_token (no OIDC issuer here) without spending the challenge', async () => {
    const { token, answer } = await c.challenge();
    const body = await expectRefusal(
      await c.submit({ token, answer, identity_token: 'eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln' }),
      401,
      /identity_token/,
      docs,
    );
    expect(body.next.path).toBe('/v1/agent-access');
    expect((await c.submit({ token, answer })).status).toBe(200);
  });

  it('answers invalid bodies with 400 in the same shape', async () => {
    for (const body of [{ token: 'x' }, { token: 'x', answer: 391 }, { token: 'x', answer: '1', extra: true }]) {
      const refusal = await expectRefusal(await c.submit(body), 400, /body/, docs);
      expect(refusal.next.path).toBe('/v1/agent-access');
    }
  });
});

describe.each(backends)('agent access limits on %s', (backend) => {
  it('A3 refuses a token older than ttl_seconds', async () => {
    const server = await startTestServer({ backend, env: { AGENT_ACCESS_CHALLENGE_TTL_SECONDS: '1' } });
    try {
      const c = client(server);
      expect((await (await c.get('/v1/agent-access')).json()).ttl_seconds).toBe(1);
      const { token, answer, body: issued } = await c.challenge();
      // The contract's timer must run out: until the token's expires_at (ttl_seconds, 1 s), no longer.
      await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(issued.expires_at) - Date.now()) + 50));
      const body = await expectRefusal(await c.submit({ token, answer }), 401, /expired/, `${server.config.publicUrl}/docs`);
      expect(body.next.path).toBe('/v1/agent-access/challenge');
    } finally {
      await server.close();
    }
  });

  it('answers 429 with Retry-After past the per-address limit, across the three operations', async () => {
    const server = await startTestServer({ backend, env: { AGENT_ACCESS_RATE_PER_MINUTE: '3' } });
    try {
      const c = client(server);
      expect((await c.get('/v1/agent-access')).status).toBe(200);
      const { token, answer } = await c.challenge();
      expect((await c.submit({ token, answer })).status).toBe(200);
      for (const res of [await c.get('/v1/agent-access'), await c.get('/v1/agent-access/challenge'), await c.submit({ token: 'x', answer: '1' })]) {
        const body = await expectRefusal(res, 429, /Too many requests/, `${server.config.publicUrl}/docs`);
        expect(body.next.path).toBe('/v1/agent-access');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      // Keyed endpoints are not part of this budget.
      expect((await server.request('/v1/sessions')).status).not.toBe(429);
    } finally {
      await server.close();
    }
  });
});
