// GET /metrics over real HTTP with real Chromium, on every backend: the token guard, the
// Prometheus text format with the node's label, sessions counted through their life (created,
// running, ended by reason, create latency, their browsers' CPU and memory), requests by
// operation and status, and the queues read from the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { until } from '../batches/test-support.js';
import { createSession, endSession } from '../sessions/test-support.js';

const METRICS_TOKEN = 'metrics_0123456789abcdef';

/** Parses the text format: series (name with its labels as printed) → value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The value of the one series named `name` whose labels include all of `labels`. */
function value(series: Map<string, number>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const [key, v] of series) {
    const m = /^([^{]+)(?:\{(.*)\})?$/.exec(key)!;
    if (m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, want]) => have[k] === want)) return v;
  }
  return undefined;
}

describe.each(backends)('metrics on %s', (backend) => {
  let t: TestServer;
  const scrape = async () => {
    const res = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    return { text, series: parse(text) };
  };

  beforeAll(async () => {
    t = await startTestServer({ backend, env: { METRICS_TOKEN, MAX_CONCURRENT_BROWSERS: '1' } });
  });
  afterAll(() => t?.close());

  it('asks for the token when one is set', async () => {
    for (const headers of [{}, { authorization: `Bearer ${METRICS_TOKEN}x` }, { 'service-api-key': t.apiKey }] as Record<string, string>[]) {
      const res = await fetch(`${t.url}/metrics`, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  it("follows a session's life, requests by operation, and the shared queues", async () => {
    const before = await scrape();
    expect(value(before.series, 'cloud_browser_sessions_running')).toBe(0);
    expect(value(before.series, 'cloud_browser_batch_items_waiting')).toBe(0);
    expect(value(before.series, 'cloud_browser_webhook_deliveries_due')).toBe(0);
    expect(value(before.series, 'cloud_browser_webhook_deliveries_total', { outcome: 'succeeded' })).toBe(0);
    // Every series names the node.
    const node = /node="([^"]+)"/.exec(before.text)![1];
    expect(node).toContain(':');
    expect(
      before.text
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .every((l) => l.includes(`node="${node}"`)),
    ).toBe(true);
    if (backend === 'postgres') expect(value(before.series, 'cloud_browser_db_pool_connections', { state: 'max' })).toBe(10);
    else expect(before.text).not.toContain('cloud_browser_db_pool_connections');

    const { id } = await createSession(t, { browser: { headless: { active: true } } });
    // A refused fetch: a 400 of the web fetch operation.
    expect((await t.request('/v1/tools/fetch/webpage', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(400);

    const during = await until(scrape, (s) => value(s.series, 'cloud_browser_session_create_duration_seconds_count') === 1);
    expect(value(during.series, 'cloud_browser_sessions_running')).toBe(1);
    expect(value(during.series, 'cloud_browser_sessions_created_total')).toBe(1);
    const createSeconds = value(during.series, 'cloud_browser_session_create_duration_seconds_sum')!;
    expect(createSeconds).toBeGreaterThan(0);
    expect(createSeconds).toBeLessThan(60);
    expect(value(during.series, 'cloud_browser_session_browsers_processes')).toBeGreaterThan(1);
    expect(value(during.series, 'cloud_browser_session_browsers_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(value(during.series, 'cloud_browser_session_browsers_cpu_seconds')).toBeGreaterThan(0);
    expect(value(during.series, 'cloud_browser_http_requests_total', { operation: 'createSession', status: '200' })).toBe(1);
    expect(value(during.series, 'cloud_browser_http_requests_total', { operation: 'fetchWebpage', status: '400' })).toBe(1);
    expect(value(during.series, 'cloud_browser_http_request_duration_seconds_count', { operation: 'createSession' })).toBe(1);

    expect((await endSession(t, id)).status).toBe(200);
    const after = await until(scrape, (s) => value(s.series, 'cloud_browser_sessions_ended_total', { status: 'completed', reason: 'api' }) === 1);
    expect(value(after.series, 'cloud_browser_sessions_running')).toBe(0);
    expect(value(after.series, 'cloud_browser_session_browsers_processes')).toBe(0);
    expect(value(after.series, 'cloud_browser_session_browsers_memory_bytes')).toBe(0);
    // Process metrics of the server itself.
    expect(value(after.series, 'cloud_browser_process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it('counts queued batch items waiting for a browser', async () => {
    // A batch row with items not yet claimed, as the batches capability writes it. The
    // server's one browser (MAX_CONCURRENT_BROWSERS=1) is held by a session, so the batch
    // worker has no capacity to claim them: they wait, whenever its poll comes.
    const { id } = await createSession(t, { browser: { headless: { active: true } } });
    try {
      const [{ project_id }] = await t.db.query<{ project_id: string }>('SELECT project_id FROM api_keys LIMIT 1');
      await t.db.query(
        `INSERT INTO batches (id, project_id, api_key_id, total_requests, next_index, configuration, queue_deadline)
         VALUES ('batch_metrics', $1, 'key_x', 7, 2, '{}', now() + interval '1 hour')`,
        [project_id],
      );
      await t.db.query(`INSERT INTO batch_items (batch_id, item_index, status) VALUES ('batch_metrics', 0, 'pending'), ('batch_metrics', 1, 'completed')`);
      const s = await scrape();
      expect(value(s.series, 'cloud_browser_batch_items_waiting')).toBe(6);
    } finally {
      // The batch goes before the browser is freed, pass or fail: its items never start.
      await t.db.query(`UPDATE batches SET status = 'cancelled' WHERE id = 'batch_metrics'`);
      await t.db.query(`UPDATE batch_items SET status = 'cancelled' WHERE batch_id = 'batch_metrics' AND status = 'pending'`);
      expect((await endSession(t, id)).status).toBe(200);
    }
  });
});

describe('metrics without a token', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t?.close());

  it('answers anyone', async () => {
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('# TYPE cloud_browser_sessions_running gauge');
  });
});
