// One structured log line a request, with its request id, echoed in X-Request-Id: a sane
// incoming id is kept (a proxy's or a client's, to follow one request across services), any
// other is replaced; contract operations are named in the line, routes outside it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';

describe.each(backends)('request log on %s', (backend) => {
  let server: TestServer;
  const logs: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'info' } });
  });
  afterAll(() => server?.close());

  const lines = (requestId: string) => logs.map((l) => JSON.parse(l)).filter((l) => l.requestId === requestId && l.msg === 'request');

  it('keeps a sane incoming id, logs one line with it, and echoes it', async () => {
    const res = await server.request('/v1/billing', { headers: { 'x-request-id': 'lb-7f3a:0042' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe('lb-7f3a:0042');
    const [line, ...more] = lines('lb-7f3a:0042');
    expect(more).toHaveLength(0);
    expect(line).toMatchObject({ method: 'GET', path: '/v1/billing', operationId: 'getBilling', status: 200 });
    expect(typeof line.ms).toBe('number');
  });

  it('replaces an id that is too long or not plain', async () => {
    for (const incoming of ['a'.repeat(129), 'has spaces', 'semi;colon', '"quoted"', '<script>']) {
      const res = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': incoming } });
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(lines(id)).toHaveLength(1);
      expect(lines(id)[0]).toMatchObject({ path: '/healthz', status: 200 });
    }
  });

  it('gives every request an id, refused ones too', async () => {
    const res = await fetch(`${server.url}/v1/sessions`);
    expect(res.status).toBe(401);
    const id = res.headers.get('x-request-id')!;
    expect(lines(id)).toEqual([expect.objectContaining({ operationId: 'listSessions', status: 401 })]);
    // Never the query string: it can carry CDP and live-view tokens.
    await fetch(`${server.url}/healthz?token=secret-token-value`);
    expect(logs.some((l) => l.includes('secret-token-value'))).toBe(false);
  });
});
