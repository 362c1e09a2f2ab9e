// The HTTP spine against the real server: authentication, validation, the documented error
// bodies, 405 with Allow, the service routes. Capability behaviour is tested in its folder.
import { get as httpGet, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../generated/routes.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { validatorsFor } from './app.js';
import { cgroupPlace } from '../browser/cgroup.js';

describe('validators', () => {
  it('compile for every operation of the contract (they are compiled on first use)', () => {
    for (const route of routes) {
      const v = validatorsFor(route);
      expect(validatorsFor(route)).toBe(v); // once per process
      // Every path parameter is checked; a body schema, where the operation takes a body.
      if (route.path.includes('{')) expect(v.params, route.operationId).toBeTypeOf('function');
    }
    expect(routes.length).toBeGreaterThan(100);
  });
});

describe.each(backends)('HTTP spine on %s', (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ backend });
  });
  afterAll(() => server?.close());

  it('answers /healthz with the database kind', async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    // A lone node is a cluster of one: itself, alive, not draining.
    expect(await res.json()).toEqual({
      status: 'ok',
      database: backend,
      // Capped where this machine lets the server make control groups (browser/cgroup.ts).
      browsers: { running: 0, warm: 0, sandbox: 'on', limits: 'why' in cgroupPlace() ? 'off' : { memory_mb: 2048, cpus: 1 } },
      cluster: { node_id: expect.any(String), live_nodes: 1, draining: false },
    });
  });

  it("keeps an idle connection a minute, not Node's 5 s, so a client sending on it is not cut off", async () => {
    const res = await new Promise<IncomingMessage>((resolve, reject) => httpGet(`${server.url}/healthz`, resolve).on('error', reject));
    res.resume();
    expect(res.headers['keep-alive']).toBe('timeout=65');
  });

  it('refuses a missing and a wrong key with 401 and the general body', async () => {
    for (const headers of [{}, { 'service-api-key': 'sk_wrong' }] as Record<string, string>[]) {
      const res = await fetch(`${server.url}/v1/sessions`, { headers });
      expect(res.status).toBe(401);
      const body = await res.json();
      expect(body).toEqual({ error: { code: 401, message: expect.any(String) } });
    }
  });

  it("reads the key from anchor-api-key, the vendor clients' header, too; service-api-key wins when both are sent", async () => {
    const status = async (headers: Record<string, string>) => {
      const res = await fetch(`${server.url}/v1/billing`, { headers });
      return [res.status, res.ok ? undefined : ((await res.json()) as { error: { message: string } }).error.message];
    };
    expect(await status({ 'anchor-api-key': server.apiKey })).toEqual([200, undefined]);
    expect(await status({ 'Anchor-Api-Key': server.apiKey })).toEqual([200, undefined]);
    expect(await status({ 'anchor-api-key': 'sk_wrong' })).toEqual([401, 'Invalid API key (read from the anchor-api-key header)']);
    expect(await status({ 'service-api-key': 'sk_wrong' })).toEqual([401, 'Invalid API key (read from the service-api-key header)']);
    // Both: service-api-key alone is read, whichever of them is right.
    expect(await status({ 'service-api-key': server.apiKey, 'anchor-api-key': 'sk_wrong' })).toEqual([200, undefined]);
    expect(await status({ 'service-api-key': 'sk_wrong', 'anchor-api-key': server.apiKey })).toEqual([
      401,
      'Invalid API key (read from the service-api-key header)',
    ]);
    // An empty service-api-key is no key: the other header is read.
    expect(await status({ 'service-api-key': '', 'anchor-api-key': server.apiKey })).toEqual([200, undefined]);
    expect(await status({})).toEqual([401, 'Missing API key: send it in the service-api-key header (anchor-api-key is read too)']);
  });

  it("uses the fetch tool's {error: string} shape for its 401", async () => {
    const res = await fetch(`${server.url}/v1/tools/fetch/webpage`, { method: 'POST' });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: expect.any(String) });
  });

  it('needs no key under /v1/agent-access and answers its own error shape', async () => {
    const res = await fetch(`${server.url}/v1/agent-access`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"token": 1}',
    });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({ error: expect.any(String), next: { path: expect.any(String), description: expect.any(String) }, docs: expect.any(String) });
  });

  it('validates bodies before handlers: wrong type, extra field, malformed JSON, wrong type of content', async () => {
    const put = (body: string, type = 'application/json') =>
      server.request('/v1/sessions/4f1c7a52-34a7-4b8e-9d55-8f0f0b0c1d2e/tags', { method: 'PUT', headers: { 'content-type': type }, body });
    const cases: [Response, number, RegExp][] = [
      [await put('{"tags": "a"}'), 400, /tags must be array/],
      [await put('{"tags": [], "x": 1}'), 400, /must not have the property 'x'/],
      [await put('{"tags": ['), 400, /Malformed JSON/],
      [await put('{}'), 400, /must have the property 'tags'/],
      [await put('tags=a', 'application/x-www-form-urlencoded'), 415, /Content-Type must be application\/json/],
    ];
    for (const [res, status, message] of cases) {
      expect(res.status).toBe(status);
      const body = await res.json();
      expect(body.error.code).toBe(status);
      expect(body.error.message).toMatch(message);
    }
  });

  it('coerces and checks path and query values', async () => {
    const res = await server.request('/v1/sessions/not-a-uuid');
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/path\/session_id must match format "uuid"/);
    const bad = await server.request('/v1/sessions?limit=0');
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.message).toMatch(/query\/limit must be >= 1/);
  });

  it('refuses with 400 what no store could keep, before a handler sees it: NUL, half a surrogate pair, nesting past 64 levels', async () => {
    const send = (path: string, body?: string) =>
      server.request(path, body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
    const cases: [Response, RegExp][] = [
      [await send('/v1/profiles/a%00b'), /^path\/name must not contain the NUL character/],
      [await send('/v1/sessions?tags=a%00'), /^query\/tags\/0 must not contain the NUL character/],
      [
        await send('/v1/webhooks', '{"url":"https://x.example/h","subscribed_events":["session.completed"],"description":"a\\u0000b"}'),
        /^body\/description must not contain the NUL/,
      ],
      [
        await send('/v1/webhooks', '{"url":"https://x.example/h","subscribed_events":["session.completed"],"description":"\\ud800"}'),
        /^body\/description must be well-formed Unicode/,
      ],
      [await send('/v1/batch-sessions', `{"count":1,"metadata":${deep(80)}}`), /^body\/metadata(\/a)+ is nested deeper than 64 levels/],
      [await send('/v1/batch-sessions', '{"count":1,"metadata":{"k\\u0000":1}}'), /^body\/metadata key "k\\u0000" must not contain the NUL/],
    ];
    for (const [res, message] of cases) {
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(message);
    }
    // A page number past its maximum (here one that is not even finite) is refused, not sent to the database.
    const far = await send('/v1/webhooks?page=1e309');
    expect(far.status).toBe(400);
    expect((await far.json()).error.message).toBe('query/page must be a finite number');
    const infinite = await send('/v1/batch-sessions', '{"count":1,"metadata":{"n":1e309}}');
    expect((await infinite.json()).error.message).toBe('body/metadata/n must be a finite number');
    // An undeclared query parameter is ignored, whatever it holds.
    expect((await send('/v1/extensions?whatever=%00')).status).toBe(200);
    // Well-formed text beyond the Basic Multilingual Plane is fine.
    const emoji = await send('/v1/webhooks', '{"url":"https://x.example/h","subscribed_events":["session.completed"],"description":"\\ud83d\\ude00 ok"}');
    expect(emoji.status).not.toBe(400);
  });

  it('refuses bodies over the limit with 413', async () => {
    const res = await server.request('/v1/webhooks', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://example.com', subscribed_events: ['session.completed'], description: 'x'.repeat(1_100_000) }),
    });
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe(413);
  });

  it('answers 405 with Allow for an undocumented method on a documented path', async () => {
    const res = await server.request('/v1/sessions/history', { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    expect((await res.json()).error.code).toBe(405);
  });

  it('answers 404 with the general body for unknown paths', async () => {
    const res = await server.request('/v1/nothing-here');
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe(404);
  });

  it('serves the contract and an offline API reference', async () => {
    const spec = await fetch(`${server.url}/openapi.yaml`);
    expect(spec.headers.get('content-type')).toMatch(/yaml/);
    expect(await spec.text()).toMatch(/^openapi: 3\.1\.0/);
    const docs = await (await fetch(`${server.url}/docs`)).text();
    expect(docs).toContain('/docs/redoc.standalone.js');
    expect(docs).not.toMatch(/https?:\/\//);
    const bundle = await fetch(`${server.url}/docs/redoc.standalone.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.arrayBuffer()).byteLength).toBeGreaterThan(100_000);
  });

  it('sends a request id back', async () => {
    const res = await server.request('/v1/billing', { headers: { 'x-request-id': 'req-123' } });
    expect(res.headers.get('x-request-id')).toBe('req-123');
  });
});

describe('logs', () => {
  it('are structured, carry request ids, and never hold keys or query strings', async () => {
    const logs: string[] = [];
    const server = await startTestServer({ logs, env: { LOG_LEVEL: 'debug' } });
    try {
      await server.request('/v1/sessions?token=secret-token-value', { headers: { 'x-request-id': 'req-log' } });
      await fetch(`${server.url}/v1/sessions`, { headers: { 'service-api-key': 'sk_wrong_key_value' } });
      await fetch(`${server.url}/v1/sessions`, { headers: { 'anchor-api-key': 'sk_wrong_vendor_key_value' } });
      await fetch(`${server.url}/v1/sessions`, { headers: { 'anchor-api-key': server.apiKey, 'x-request-id': 'req-vendor' } });
      const lines = logs.map((l) => JSON.parse(l));
      expect(lines.find((l) => l.requestId === 'req-vendor')).toMatchObject({ msg: 'request', status: 200 });
      const access = lines.find((l) => l.requestId === 'req-log');
      expect(access).toMatchObject({ msg: 'request', method: 'GET', path: '/v1/sessions', status: expect.any(Number) });
      const text = logs.join('\n');
      expect(text).not.toContain(server.apiKey);
      expect(text).not.toContain('sk_wrong_key_value');
      expect(text).not.toContain('sk_wrong_vendor_key_value');
      expect(text).not.toContain('secret-token-value');
    } finally {
      await server.close();
    }
  });
});
