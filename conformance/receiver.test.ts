import { afterEach, describe, expect, it } from 'vitest';
import { FixtureServer } from './fixtures.js';
import { Receiver } from './receiver.js';

let fixtures: FixtureServer | undefined;
afterEach(() => fixtures?.close());

const post = async (url: string, body: string, headers: Record<string, string> = {}) =>
  (await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } })).status;

describe('Receiver', () => {
  it('records raw bodies and headers, answers 204 by default, and stops at close', async () => {
    fixtures = new FixtureServer();
    const r = new Receiver(fixtures, { name: 'w2 receiver' });
    const url = await r.url();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/conformance\/receiver\/w2-receiver-[0-9a-f]{12}$/);
    expect(await post(url, '{"id":"evt_1"}', { 'webhook-id': 'evt_1' })).toBe(204);
    expect(await post(url, 'not json')).toBe(204);
    expect(r.received).toHaveLength(2);
    expect(r.received[0]).toMatchObject({ method: 'POST', text: '{"id":"evt_1"}', json: { id: 'evt_1' }, answered: 204 });
    expect(r.received[0].headers['webhook-id']).toBe('evt_1');
    expect(r.received[0].body.equals(Buffer.from('{"id":"evt_1"}'))).toBe(true);
    expect(r.received[1].json).toBeUndefined();
    expect(r.received[1].jsonError).toBeTruthy();
    r.close();
    expect(await post(url, '{}')).toBe(404);
    expect(r.received).toHaveLength(2);
  });

  it('answers the chosen status and waits for the deliveries a check expects', async () => {
    fixtures = new FixtureServer();
    const r = new Receiver(fixtures, { status: (_req, i) => (i === 0 ? 500 : 200) });
    const url = await r.url();
    const isA = (x: { headers: Record<string, string> }) => x.headers['webhook-id'] === 'a';
    const waiting = r.waitFor(isA, 5_000, 2);
    expect(await post(url, '{}', { 'webhook-id': 'a' })).toBe(500);
    expect(await post(url, '{}', { 'webhook-id': 'b' })).toBe(200);
    expect(await post(url, '{}', { 'webhook-id': 'a' })).toBe(200);
    const got = await waiting;
    expect(got.map((x) => x.answered)).toEqual([500, 200]);
    // Already received: resolves at once; not enough by the deadline: what arrived.
    expect(await r.waitFor(isA, 0)).toHaveLength(1);
    const started = Date.now();
    expect(await r.waitFor(isA, 100, 3)).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
  });
});
