// Event coordination over real HTTP on a real server and database: a value posted under a
// name reaches the waits for it (the vendor SDK's events.signal and events.waitFor, and
// plain requests), is kept for a later wait when no one waits, is the project's own, and the
// limits on the wait, the value's size and the values kept answer 400, 408 and 429.
import Anchorbrowser from 'anchorbrowser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { call } from '../batches/test-support.js';
import { eventually } from '../sessions/test-support.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';

const name = (label: string) => `${label}-${Math.random().toString(36).slice(2, 8)}`;

describe.each(backends)('event coordination (%s)', (backend) => {
  let server: TestServer;
  let client: Anchorbrowser;
  const logs: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ backend, logs, env: { LOG_LEVEL: 'info' } });
    client = new Anchorbrowser({ apiKey: server.apiKey, baseURL: server.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const wait = (event: string, body: unknown = {}, key = server.apiKey) =>
    call(server, 'POST', `/v1/events/${encodeURIComponent(event)}/wait`, body, { 'service-api-key': key });
  const signal = (event: string, body: unknown, key = server.apiKey) =>
    call(server, 'POST', `/v1/events/${encodeURIComponent(event)}`, body, { 'service-api-key': key });
  /** Waits under way on the server, by its own gauge. */
  const waitsUnderWay = async () => {
    const text = await fetch(`${server.url}/metrics`).then((r) => r.text());
    return Number(/^cloud_browser_event_waits(?:\{[^}]*\})? (\d+)$/m.exec(text)?.[1] ?? NaN);
  };
  /** The waits for the name that have ended on the server, by its log. */
  const waitsEnded = (event: string) => logs.filter((l) => l.includes('"event wait ended"') && l.includes(`"event":"${event}"`)).map((l) => JSON.parse(l));

  it('the vendor SDK: a wait under way answers the value posted after it began', async () => {
    const event = name('mfa_code');
    const started = Date.now();
    const waiting = client.events.waitFor(event, { timeoutMs: 20_000 });
    await eventually(async () => (await waitsUnderWay()) === 1, 5_000, 'the wait to begin');
    const posted = await client.events.signal(event, { data: { code: '482913', nested: { a: [1, 2] } } });
    expect(posted).toEqual({ data: { status: 'signaled' } });
    await expect(waiting).resolves.toEqual({ data: { code: '482913', nested: { a: [1, 2] } } });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a value posted while no one waits is kept for the next wait, which consumes it; values queue oldest first', async () => {
    const event = name('preload');
    await client.events.signal(event, { data: { n: 1 } });
    await client.events.signal(event, { data: { n: 2 } });
    expect(await client.events.waitFor(event, { timeoutMs: 0 })).toEqual({ data: { n: 1 } });
    expect(await client.events.waitFor(event)).toEqual({ data: { n: 2 } });
    const none = await wait(event, { timeoutMs: 0 });
    expect(none).toEqual({ status: 408, body: { error: { code: 408, message: 'Event was not signaled within the specified timeout' } } });
  });

  it('a post answers every wait under way for the name', async () => {
    const event = name('fanout');
    const a = wait(event, { timeoutMs: 20_000 });
    const b = wait(event, { timeoutMs: 20_000 });
    await eventually(async () => (await waitsUnderWay()) === 2, 5_000, 'both waits to begin');
    await signal(event, { data: { go: true } });
    const [ra, rb] = await Promise.all([a, b]);
    expect([ra.status, rb.status]).toEqual([200, 200]);
    expect(ra.body).toEqual({ data: { go: true } });
    expect(rb.body).toEqual({ data: { go: true } });
  });

  it('408 after timeoutMs, with x-should-retry: false, so the SDK with its default retries waits once', async () => {
    const event = name('never');
    const res = await fetch(`${server.url}/v1/events/${event}/wait`, {
      method: 'POST',
      headers: { 'service-api-key': server.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ timeoutMs: 300 }),
    });
    expect(res.status).toBe(408);
    expect(res.headers.get('x-should-retry')).toBe('false');
    const retrying = new Anchorbrowser({ apiKey: server.apiKey, baseURL: server.url });
    const started = Date.now();
    const err = await retrying.events.waitFor(event, { timeoutMs: 1_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Anchorbrowser.APIError);
    expect((err as InstanceType<typeof Anchorbrowser.APIError>).status).toBe(408);
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1_000);
    expect(took).toBeLessThan(2_500);
  });

  it('the body of a wait is optional', async () => {
    const event = name('nobody');
    await signal(event, { data: { x: 1 } });
    const res = await server.request(`/v1/events/${event}/wait`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { x: 1 } });
  });

  it("names are the project's own: another project neither takes nor sees the value", async () => {
    const other = await createProject(server.db, { name: 'other', source: 'test' });
    const event = name('shared-name');
    await signal(event, { data: { secret: 'mine' } });
    expect((await wait(event, { timeoutMs: 0 }, other.key)).status).toBe(408);
    const theirs = wait(event, { timeoutMs: 1_500 }, other.key);
    await signal(event, { data: { secret: 'mine again' } });
    expect((await theirs).status).toBe(408);
    expect((await wait(event, { timeoutMs: 0 })).body).toEqual({ data: { secret: 'mine' } });
    expect((await wait(event, { timeoutMs: 0 })).body).toEqual({ data: { secret: 'mine again' } });
  });

  it('the value is sealed at rest', async () => {
    const event = name('sealed');
    await signal(event, { data: { code: 'plain-code-771' } });
    const rows = await server.db.query<{ data: string }>(`SELECT data FROM event_signals WHERE name = $1`, [event]);
    expect(rows).toHaveLength(1);
    expect(rows[0].data).not.toContain('plain-code-771');
    expect((await wait(event, { timeoutMs: 0 })).body).toEqual({ data: { code: 'plain-code-771' } });
  });

  it('a wait whose client leaves stops and consumes nothing', async () => {
    const event = name('left');
    const abort = new AbortController();
    const gone = fetch(`${server.url}/v1/events/${event}/wait`, {
      method: 'POST',
      headers: { 'service-api-key': server.apiKey, 'content-type': 'application/json' },
      body: JSON.stringify({ timeoutMs: 30_000 }),
      signal: abort.signal,
    }).catch(() => 'aborted');
    await eventually(async () => (await waitsUnderWay()) === 1, 5_000, 'the wait to begin');
    abort.abort();
    expect(await gone).toBe('aborted');
    await eventually(() => waitsEnded(event).length === 1, 5_000, 'the abandoned wait to end');
    expect(waitsEnded(event)[0].outcome).toBe('aborted');
    expect(await waitsUnderWay()).toBe(0);
    await signal(event, { data: { kept: true } });
    expect((await wait(event, { timeoutMs: 0 })).body).toEqual({ data: { kept: true } });
  });

  it('refuses bad input with 400', async () => {
    const event = name('bad');
    expect((await signal(event, {})).status).toBe(400);
    expect((await signal(event, { data: 'text' })).status).toBe(400);
    expect((await signal(event, { data: [1] })).status).toBe(400);
    const big = await signal(event, { data: { blob: 'x'.repeat(64 * 1024) } });
    expect(big.status).toBe(400);
    expect(big.body.error.message).toMatch(/at most 65536/);
    expect((await wait(event, { timeoutMs: 600_001 })).status).toBe(400);
    expect((await wait(event, { timeoutMs: -1 })).status).toBe(400);
    expect((await wait(event, { timeoutMs: 1.5 })).status).toBe(400);
    expect((await signal('n'.repeat(257), { data: {} })).status).toBe(400);
    // Nothing of the refused posts was kept.
    expect((await wait(event, { timeoutMs: 0 })).status).toBe(408);
  });

  it('without a key: 401', async () => {
    const res = await fetch(`${server.url}/v1/events/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"data":{}}' });
    expect(res.status).toBe(401);
  });
});

describe.each(backends)('event coordination limits (%s)', (backend) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ backend, env: { EVENT_RETENTION_SECONDS: '1', EVENT_MAX_PENDING_PER_PROJECT: '2' } });
  });
  afterAll(async () => {
    await server?.close();
  });
  const post = (event: string, data: unknown) => call(server, 'POST', `/v1/events/${event}`, { data });
  const take = (event: string) => call(server, 'POST', `/v1/events/${event}/wait`, { timeoutMs: 0 });

  it('a value no wait takes within EVENT_RETENTION_SECONDS is dropped', async () => {
    const event = name('stale');
    expect((await post(event, { code: 'old' })).status).toBe(200);
    // Past its expiry by the database's clock, the one the query compares with.
    await eventually(async () => (await server.db.query(`SELECT 1 FROM event_signals WHERE name = $1 AND expires_at < now()`, [event])).length === 1, 5_000);
    expect((await take(event)).status).toBe(408);
  });

  it('EVENT_MAX_PENDING_PER_PROJECT values not yet taken; the next post answers 429 until one is taken', async () => {
    // The first test's value may still count until it expires: start from none.
    await eventually(async () => (await server.db.query(`SELECT 1 FROM event_signals WHERE consumed_at IS NULL AND expires_at > now()`)).length === 0, 5_000);
    const event = name('full');
    expect((await post(event, { n: 1 })).status).toBe(200);
    expect((await post(event, { n: 2 })).status).toBe(200);
    const res = await server.request(`/v1/events/${event}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"data":{"n":3}}' });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await take(event)).body).toEqual({ data: { n: 1 } });
    expect((await post(event, { n: 3 })).status).toBe(200);
  });
});
