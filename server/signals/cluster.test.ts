// Event coordination across the nodes of one database: two real servers (in-process, real
// HTTP) share one PostgreSQL schema, as two nodes of a cluster do. Each node's wake-ups are
// its own memory, so a wait on one node answering a post to the other proves the database
// carries it (the wait's poll).
import { randomBytes } from 'node:crypto';
import Anchorbrowser from 'anchorbrowser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../sessions/test-support.js';
import { sharedPostgresSchema, startTestServer, type TestServer } from '../testing/harness.js';
import { POLL_MS } from './wait.js';

const onPostgres = Boolean(process.env.DATABASE_URL);
if (!onPostgres) console.warn('event coordination across nodes: skipped, several nodes need PostgreSQL and DATABASE_URL is not set');

describe.skipIf(!onPostgres)('event coordination across two nodes on one PostgreSQL', () => {
  let a: TestServer;
  let b: TestServer;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const schema = await sharedPostgresSchema();
    drop = schema.drop;
    // Every node of one database shares the key that seals its secrets.
    const env = { SECRETS_KEY: randomBytes(32).toString('hex') };
    a = await startTestServer({ databaseUrl: schema.url, env });
    b = await startTestServer({ databaseUrl: schema.url, env: { ...env, BOOTSTRAP_API_KEY: a.apiKey } });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await drop?.();
  });

  const waitsOn = async (s: TestServer) =>
    Number(/^cloud_browser_event_waits(?:\{[^}]*\})? (\d+)$/m.exec(await fetch(`${s.url}/metrics`).then((r) => r.text()))?.[1] ?? NaN);

  it('a wait on node A answers a value posted to node B, within a poll interval or so', async () => {
    const onA = new Anchorbrowser({ apiKey: a.apiKey, baseURL: a.url, maxRetries: 0 });
    const onB = new Anchorbrowser({ apiKey: a.apiKey, baseURL: b.url, maxRetries: 0 });
    const event = `otp-${randomBytes(3).toString('hex')}`;
    let answeredAt = 0;
    const waiting = onA.events.waitFor(event, { timeoutMs: 20_000 }).then((r) => ((answeredAt = Date.now()), r));
    await eventually(async () => (await waitsOn(a)) === 1, 5_000, 'the wait on A to begin');
    const postedAt = Date.now();
    await onB.events.signal(event, { data: { code: '120934' } });
    expect(await waiting).toEqual({ data: { code: '120934' } });
    // A poll interval, the queries and the answer; well under a second on an idle machine.
    expect(answeredAt - postedAt).toBeLessThan(POLL_MS + 1_500);
  });

  it('a value posted to node B while no one waits is taken once, by the first wait on either node', async () => {
    const event = `pre-${randomBytes(3).toString('hex')}`;
    const post = await fetch(`${b.url}/v1/events/${event}`, {
      method: 'POST',
      headers: { 'anchor-api-key': a.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { n: 1 } }),
    });
    expect(post.status).toBe(200);
    const take = (s: TestServer) =>
      fetch(`${s.url}/v1/events/${event}/wait`, {
        method: 'POST',
        headers: { 'anchor-api-key': a.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ timeoutMs: 0 }),
      }).then((r) => r.status);
    // Raced from both nodes: exactly one takes it.
    const statuses = await Promise.all([take(a), take(b), take(a), take(b)]);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 408)).toHaveLength(3);
  });
});
