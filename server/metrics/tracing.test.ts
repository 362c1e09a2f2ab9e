// OpenTelemetry traces with OTEL_EXPORTER_OTLP_ENDPOINT, received by a local OTLP/HTTP
// collector (the JSON protocol): a request that sends a W3C traceparent continues that trace,
// and its span holds the session's creation, the browser's launch (real Chromium) and the
// database queries made for it.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

describe.each(backends)('traces on %s', (backend) => {
  let collector: Server;
  let endpoint: string;
  const spans: OtlpSpan[] = [];
  const resources: unknown[] = [];

  beforeAll(async () => {
    collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let raw = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') raw = gunzipSync(raw);
        if (req.url === '/v1/traces' && String(req.headers['content-type']).startsWith('application/json')) {
          const body = JSON.parse(raw.toString('utf8'));
          for (const rs of body.resourceSpans ?? []) {
            resources.push(rs.resource);
            for (const ss of rs.scopeSpans ?? []) spans.push(...ss.spans);
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => collector.close(() => r())));

  it("continues the caller's trace through the session's creation, its browser and its queries", async () => {
    let t: TestServer | undefined = await startTestServer({ backend, env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint } });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    try {
      const res = await t.request('/v1/sessions', {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${callerSpan}-01` },
        body: JSON.stringify({ browser: { headless: { active: true } } }),
      });
      expect(res.status).toBe(200);
      const { id } = (await res.json()).data;
      expect((await t.request(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(200);
    } finally {
      // Closing sends what is buffered.
      await t.close();
      t = undefined;
    }

    const inTrace = spans.filter((s) => s.traceId === traceId);
    const named = (name: string) => inTrace.filter((s) => s.name === name);
    const attr = (s: OtlpSpan, key: string) => s.attributes.find((a) => a.key === key)?.value;

    const [http] = named('POST /v1/sessions');
    expect(http, JSON.stringify(inTrace.map((s) => s.name))).toBeDefined();
    expect(http.parentSpanId).toBe(callerSpan);
    expect(attr(http, 'http.response.status_code')).toEqual({ intValue: 200 });
    expect(attr(http, 'operation.id')).toEqual({ stringValue: 'createSession' });

    const [create] = named('session.create');
    expect(create.parentSpanId).toBe(http.spanId);
    const [launch] = named('browser.launch');
    expect(launch.parentSpanId).toBe(create.spanId);
    expect(attr(create, 'browser.warm')).toEqual({ boolValue: false });

    // The session's row is written inside its creation's span; the SQL is there, its values never.
    const insert = inTrace.find((s) => s.name === 'db INSERT' && String(attr(s, 'db.query.text')?.stringValue).includes('INSERT INTO sessions'));
    expect(insert?.parentSpanId).toBe(create.spanId);
    // The DELETE is its own trace (no traceparent), with its own spans.
    expect(spans.some((s) => s.name === 'DELETE /v1/sessions/{session_id}' && s.traceId !== traceId)).toBe(true);

    expect(JSON.stringify(resources)).toContain('"cloud-browser"');
  });
});
