// GET /v1/billing over real HTTP: the account (BL1), the usage block exactly when asked
// for (BL2), the usage series equal to GET /v1/sessions/history?metrics=credits_used and
// without web-fetch credits, bucketed by creation time at hour, day, week and month
// boundaries (BL3), bad ranges, session settlement on real Chromium, and 402.
import { setTimeout as sleep } from 'node:timers/promises';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { compileSchema, createAjv, loadSpec } from '../http/spec.js';
import { insertSession } from '../sessions/store.js';
import { backends, startTestServer, type TestServer } from '../testing/harness.js';
import { call, HEADLESS, until } from '../batches/test-support.js';
import { charge } from '../credits/ledger.js';
import { FETCH_CREDITS } from '../credits/prices.js';
// Solved as an agent would, by the conformance suite's own solver.
import { solveArithmetic } from '../../conformance/arithmetic.js';

const spec = loadSpec();
const ajv = createAjv(spec);
const isBilling = compileSchema(ajv, { $ref: '#/components/schemas/BillingResponse' });
function expectBilling(body: unknown) {
  expect(isBilling(body), JSON.stringify(isBilling.errors)).toBe(true);
}

/** A past session row, as the session manager stores it, created at `createdAt` and settled for `credits`. */
async function pastSession(server: TestServer, projectId: string, createdAt: string, credits: number) {
  const id = randomUUID();
  await insertSession(server.db, { id, projectId, nodeId: 'elsewhere', configuration: {}, tags: [], cdpToken: 't', liveViewToken: 'l' });
  await server.db.query(
    `UPDATE sessions SET status = 'completed', created_at = $2, started_at = $2, ended_at = $2::timestamptz + interval '1 minute', credits_used = $3 WHERE id = $1`,
    [id, createdAt, credits],
  );
  return id;
}

/** Every page of GET /v1/sessions/history?metrics=credits_used for the range, as [date, credits]. */
async function history(server: TestServer, query: string): Promise<[string, number][]> {
  const out: [string, number][] = [];
  for (let page = 1; ; page++) {
    const res = await call(server, 'GET', `/v1/sessions/history?metrics=credits_used&limit=100&page=${page}&${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    out.push(...res.body.data.map((p: any) => [p.date, p.credits_used] as [string, number]));
    if (page >= res.body.pagination.total_pages) return out;
  }
}

async function usage(server: TestServer, query: string): Promise<{ body: any; series: [string, number][] }> {
  const res = await call(server, 'GET', `/v1/billing?${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expectBilling(res.body);
  return { body: res.body, series: res.body.data.usage.buckets.map((b: any) => [b.start, b.credits_used]) };
}

const bucket = (series: [string, number][], start: string) => series.find(([d]) => d === new Date(start).toISOString())?.[1];

describe.each(backends)('billing on %s', (backend) => {
  let t: TestServer;
  let projectId: string;
  beforeAll(async () => {
    t = await startTestServer({
      backend,
      env: { INCLUDED_CREDITS: '500', MAX_CONCURRENT_BROWSERS: '3', PRICE_PER_BROWSER_MINUTE: '6', PRICE_PER_SCREENSHOT: '0.25' },
    });
    projectId = (await t.db.query<{ project_id: string }>('SELECT project_id FROM api_keys LIMIT 1'))[0].project_id;
  });
  afterAll(() => t?.close());

  it('BL1, BL2: answers balance, period usage, tier and limits; no usage block unless asked', async () => {
    const res = await call(t, 'GET', '/v1/billing');
    expect(res.status).toBe(200);
    expectBilling(res.body);
    const now = new Date();
    expect(res.body.data).toEqual({
      credits: 500,
      credits_used: 0,
      included_credits: 500,
      billing_period: {
        start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
        end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      },
      tier: 'self-hosted',
      max_concurrent_browsers: 3,
      cost_limit: null,
    });
    expect(res.body.data).not.toHaveProperty('usage');
    for (const q of ['granularity=week', `from_date=${new Date(Date.now() - 86_400_000).toISOString()}`, `to_date=${now.toISOString()}`]) {
      const { body } = await usage(t, q);
      expect(body.data.usage, q).toMatchObject({
        granularity: expect.any(String),
        from_date: expect.any(String),
        to_date: expect.any(String),
        buckets: expect.any(Array),
      });
    }
    // Defaults: 30 days before now, to now, by day.
    const { body } = await usage(t, 'granularity=day');
    const u = body.data.usage;
    expect(Math.abs(Date.parse(u.to_date) - Date.now())).toBeLessThan(60_000);
    expect(Date.parse(u.to_date) - Date.parse(u.from_date)).toBe(30 * 86_400_000);
    expect(u.buckets.length).toBeGreaterThanOrEqual(30);
    expect((await usage(t, 'from_date=2025-01-01T00:00:00Z&to_date=2025-01-02T00:00:00Z')).body.data.usage.granularity).toBe('day');
  });

  it('answers 400 to bad dates, a reversed range and an unknown granularity', async () => {
    for (const q of [
      'from_date=yesterday',
      'to_date=2025-13-45T00:00:00Z',
      'from_date=2025-02-30T00:00:00Z',
      'from_date=2025-03-02T00:00:00Z&to_date=2025-03-01T00:00:00Z',
      'from_date=2025-03-01T00:00:00Z&to_date=2025-03-01T00:00:00Z',
      'granularity=year',
      'granularity=',
      'from_date=2000-01-01T00:00:00Z&to_date=2025-01-01T00:00:00Z&granularity=hour',
    ]) {
      const res = await call(t, 'GET', `/v1/billing?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body, q).toMatchObject({ error: { code: 400, message: expect.any(String) } });
    }
  });

  it('BL3: buckets credits by session creation time in UTC at hour, day, week and month boundaries, as session history does, without web fetch', async () => {
    // Sunday 9 March 2025 23:59:59.999 and Monday 10 March 00:00: different days and weeks
    // (weeks start on Monday), same month. 31 March 23:59:59 and 1 April 00:00: different months.
    await pastSession(t, projectId, '2025-03-09T23:59:59.999Z', 1);
    await pastSession(t, projectId, '2025-03-10T00:00:00Z', 2);
    await pastSession(t, projectId, '2025-03-10T00:59:59Z', 4);
    await pastSession(t, projectId, '2025-03-31T23:59:59Z', 8);
    await pastSession(t, projectId, '2025-04-01T00:00:00Z', 16);
    // Outside [from, to): before the range, and exactly at its end.
    await pastSession(t, projectId, '2025-02-28T23:59:59Z', 100);
    await pastSession(t, projectId, '2025-05-01T00:00:00Z', 200);
    // A web fetch in the range: in credits_used (this period), never in the series.
    await charge(t.db, { projectId, kind: 'fetch', credits: FETCH_CREDITS });
    await t.db.query(`UPDATE usage_ledger SET created_at = '2025-03-10T12:00:00Z' WHERE kind = 'fetch'`);
    const range = 'from_date=2025-03-01T00:00:00Z&to_date=2025-05-01T00:00:00Z';

    const day = await usage(t, `${range}&granularity=day`);
    expect(day.series).toHaveLength(61);
    expect(day.series).toEqual(await history(t, `${range}&granularity=day`));
    expect(bucket(day.series, '2025-03-09')).toBe(1);
    expect(bucket(day.series, '2025-03-10')).toBe(6);
    expect(bucket(day.series, '2025-03-31')).toBe(8);
    expect(bucket(day.series, '2025-04-01')).toBe(16);
    expect(day.series.reduce((s, [, c]) => s + c, 0)).toBe(31);
    expect(day.body.data.usage).toMatchObject({ granularity: 'day', from_date: '2025-03-01T00:00:00.000Z', to_date: '2025-05-01T00:00:00.000Z' });

    const week = await usage(t, `${range}&granularity=week`);
    expect(week.series).toEqual(await history(t, `${range}&granularity=week`));
    expect(week.series[0][0]).toBe('2025-02-24T00:00:00.000Z'); // the Monday of the week holding 1 March
    expect(bucket(week.series, '2025-03-03')).toBe(1);
    expect(bucket(week.series, '2025-03-10')).toBe(6);
    expect(bucket(week.series, '2025-03-31')).toBe(8 + 16); // Monday 31 March: both sides of the month's end

    const month = await usage(t, `${range}&granularity=month`);
    expect(month.series).toEqual(await history(t, `${range}&granularity=month`));
    expect(month.series).toEqual([
      ['2025-03-01T00:00:00.000Z', 15],
      ['2025-04-01T00:00:00.000Z', 16],
    ]);

    const hourRange = 'from_date=2025-03-09T22:00:00Z&to_date=2025-03-10T02:00:00Z';
    const hour = await usage(t, `${hourRange}&granularity=hour`);
    expect(hour.series).toEqual(await history(t, `${hourRange}&granularity=hour`));
    expect(hour.series).toEqual([
      ['2025-03-09T22:00:00.000Z', 0],
      ['2025-03-09T23:00:00.000Z', 1],
      ['2025-03-10T00:00:00.000Z', 6],
      ['2025-03-10T01:00:00.000Z', 0],
    ]);

    // A range that does not start on a period boundary starts at its period, like history.
    const odd = 'from_date=2025-03-09T12:00:00Z&to_date=2025-03-11T12:00:00Z&granularity=day';
    expect((await usage(t, odd)).series).toEqual(await history(t, odd));
    expect((await usage(t, odd)).series).toEqual([
      ['2025-03-09T00:00:00.000Z', 1],
      ['2025-03-10T00:00:00.000Z', 6],
      ['2025-03-11T00:00:00.000Z', 0],
    ]);
  });

  it('settles a session when it ends: minutes, screenshots, the ledger and the balance', async () => {
    const before = (await call(t, 'GET', '/v1/billing')).body.data;
    const created = await call(t, 'POST', '/v1/sessions', HEADLESS);
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    const browser = await chromium.connectOverCDP(created.body.data.cdp_url);
    const page = browser.contexts()[0].pages()[0] ?? (await browser.contexts()[0].newPage());
    await page.screenshot();
    await page.screenshot();
    await browser.close();
    // Negative: the client going away neither ends nor charges the session (no event says so).
    await sleep(500);
    // Running: nothing charged yet.
    expect((await call(t, 'GET', `/v1/sessions/${id}`)).body.data.status).toBe('running');
    expect((await call(t, 'GET', `/v1/sessions/${id}`)).body.data.credits_used).toBe(0);
    expect((await call(t, 'DELETE', `/v1/sessions/${id}`)).status).toBe(200);

    const [row] = await t.db.query<{ created_at: Date; ended_at: Date; screenshots: number; credits_used: number }>(
      'SELECT created_at, ended_at, screenshots, credits_used FROM sessions WHERE id = $1',
      [id],
    );
    expect(row.screenshots).toBe(2);
    const minutes = (row.ended_at.getTime() - row.created_at.getTime()) / 60_000;
    expect(row.credits_used).toBeCloseTo(minutes * 6 + 2 * 0.25, 5);
    expect(row.credits_used).toBeGreaterThan(0.5);
    const ledger = await t.db.query<{ kind: string; credits: number }>('SELECT kind, credits FROM usage_ledger WHERE session_id = $1', [id]);
    expect(ledger).toEqual([{ kind: 'session', credits: row.credits_used }]);

    const after = (await call(t, 'GET', '/v1/billing')).body.data;
    expect(after.credits_used).toBeCloseTo(before.credits_used + row.credits_used, 5);
    expect(after.credits).toBeCloseTo(before.credits - row.credits_used, 5);
    // The session's credits are in its creation period's bucket, and in history.
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const q = `from_date=${from}&to_date=${to}&granularity=hour`;
    const series = (await usage(t, q)).series;
    expect(series).toEqual(await history(t, q));
    expect(series.reduce((s, [, c]) => s + c, 0)).toBeCloseTo(row.credits_used, 5);
  });

  it('a session whose browser goes away (Browser.close over CDP) is settled too', async () => {
    const created = await call(t, 'POST', '/v1/sessions', HEADLESS);
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    // Time is what is charged: credits > 0.1 below needs more than 1 s of browser (6 a minute).
    await sleep(1500);
    const browser = await chromium.connectOverCDP(created.body.data.cdp_url);
    const cdp = await browser.newBrowserCDPSession();
    await cdp.send('Browser.close').catch(() => {});
    const ended = await until(
      () => call(t, 'GET', `/v1/sessions/${id}`),
      (r) => ['completed', 'failed'].includes(r.body.data.status),
      30_000,
      250,
    );
    const { credits_used: credits, duration } = ended.body.data;
    expect(credits).toBeGreaterThan(0.1);
    expect(Math.abs(credits - (duration * 6) / 60)).toBeLessThan(0.2);
    const ledger = await t.db.query<{ credits: number }>('SELECT credits FROM usage_ledger WHERE session_id = $1', [id]);
    expect(ledger).toEqual([{ credits }]);
  });
});

describe('402 and the agent-access tier', () => {
  it('answers 402 to session creation with no balance left, and to a project over its cost limit', async () => {
    const t = await startTestServer({ env: { INCLUDED_CREDITS: '0' } });
    try {
      const res = await call(t, 'POST', '/v1/sessions', HEADLESS);
      expect(res.status).toBe(402);
      expect(res.body).toEqual({ error: { code: 402, message: expect.stringMatching(/insufficient credits/i) } });
      expect((await call(t, 'GET', '/v1/billing')).body.data).toMatchObject({ credits: 0, included_credits: 0 });
    } finally {
      await t.close();
    }
    const capped = await startTestServer({ env: { COST_LIMIT: '0.01' } });
    try {
      const projectId = (await capped.db.query<{ project_id: string }>('SELECT project_id FROM api_keys LIMIT 1'))[0].project_id;
      expect((await call(capped, 'GET', '/v1/billing')).body.data.cost_limit).toBe(0.01);
      await charge(capped.db, { projectId, kind: 'fetch', credits: 0.01 });
      const res = await call(capped, 'POST', '/v1/sessions', HEADLESS);
      expect(res.status).toBe(402);
      expect(res.body.error.message).toMatch(/cost limit/);
    } finally {
      await capped.close();
    }
  });

  it('a project made through agent access has tier agent-access, no included credits, and its gift', async () => {
    const t = await startTestServer({ env: { AGENT_ACCESS_ANONYMOUS_CREDITS: '5', INCLUDED_CREDITS: '1000' } });
    try {
      const challenge = await (await fetch(`${t.url}/v1/agent-access/challenge`)).json();
      const submitted = await fetch(`${t.url}/v1/agent-access`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: challenge.token, answer: solveArithmetic(challenge.challenge.prompt) }),
      });
      expect(submitted.status).toBe(200);
      const { api_key: key, project_id: agentProject } = await submitted.json();
      const billing = await call(t, 'GET', '/v1/billing', undefined, { 'service-api-key': key });
      expect(billing.status).toBe(200);
      expectBilling(billing.body);
      expect(billing.body.data).toMatchObject({ tier: 'agent-access', included_credits: 0, credits: 5, credits_used: 0 });
      // Spent: creation is refused for that project only.
      await charge(t.db, { projectId: agentProject, kind: 'fetch', credits: 5 });
      expect((await call(t, 'GET', '/v1/billing', undefined, { 'service-api-key': key })).body.data.credits).toBe(0);
      expect((await call(t, 'POST', '/v1/sessions', HEADLESS, { 'service-api-key': key })).status).toBe(402);
      expect((await call(t, 'POST', '/v1/batch-sessions', { count: 1 }, { 'service-api-key': key })).status).toBe(402);
      expect((await call(t, 'GET', '/v1/billing')).body.data).toMatchObject({ tier: 'self-hosted', credits: 1000 });
    } finally {
      await t.close();
    }
  });
});
