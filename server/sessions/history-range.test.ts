// A history range the contract accepts but the database cannot hold: the year 1 is its
// earliest, and to_date alone starts the range 30 days before it. Both GET /v1/sessions/history
// and GET /v1/billing answered 500 ("date/time field value out of range") to
// to_date=0001-01-01T00:00:00Z; found by conformance G13. Now 400 saying why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer();
}, 120_000);
afterAll(async () => {
  await srv?.close();
});

const message = 'The range starts before 0001-01-01 (without from_date it starts 30 days before to_date)';

describe.each(['/v1/sessions/history', '/v1/billing'])('%s at the earliest dates', (path) => {
  it('a range that would start before the year 1 answers 400', async () => {
    const res = await srv.request(`${path}?to_date=${encodeURIComponent('0001-01-01T00:00:00Z')}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { code: 400, message } });
  });

  it('a range from the first day of the year 1 is served', async () => {
    const query = `from_date=${encodeURIComponent('0001-01-01T00:00:00Z')}&to_date=${encodeURIComponent('0001-01-03T00:00:00Z')}`;
    const res = await srv.request(`${path}?${query}`);
    expect(res.status).toBe(200);
  });
});
