// The price table and the account arithmetic, without a server: sessions priced per minute,
// proxy gigabyte and screenshot; the billing period; included credits renewing each month
// while the gift is spent once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../config/config.js';
import { createProject } from '../auth/api-keys.js';
import type { Db } from '../store/db.js';
import { openTestPglite } from '../testing/pglite-template.js';
import { account, billingPeriod, refuseUnpaid } from './account.js';
import { charge } from './ledger.js';
import { FETCH_CREDITS, priceTable, sessionCredits } from './prices.js';

describe('the price table', () => {
  it('comes from the configuration, with documented defaults', () => {
    expect(priceTable(loadConfig({}))).toEqual({ perBrowserMinute: 0.01, perProxyGb: 4, perScreenshot: 0.001 });
    expect(priceTable(loadConfig({ PRICE_PER_BROWSER_MINUTE: '0.5', PRICE_PER_PROXY_GB: '2', PRICE_PER_SCREENSHOT: '0' }))).toEqual({
      perBrowserMinute: 0.5,
      perProxyGb: 2,
      perScreenshot: 0,
    });
    expect(() => loadConfig({ PRICE_PER_PROXY_GB: '-1' })).toThrow(/PRICE_PER_PROXY_GB/);
    expect(() => loadConfig({ COST_LIMIT: 'lots' })).toThrow(/COST_LIMIT/);
    expect(loadConfig({}).costLimit).toBeNull();
    expect(loadConfig({ COST_LIMIT: '25' }).costLimit).toBe(25);
    expect(FETCH_CREDITS).toBe(0.005);
  });

  it('prices minutes pro rata, proxy gigabytes and screenshots', () => {
    const prices = { perBrowserMinute: 0.01, perProxyGb: 4, perScreenshot: 0.001 };
    expect(sessionCredits({ durationMs: 0, proxyBytes: 0, screenshots: 0 }, prices)).toBe(0);
    expect(sessionCredits({ durationMs: 60_000, proxyBytes: 0, screenshots: 0 }, prices)).toBe(0.01);
    expect(sessionCredits({ durationMs: 90_000, proxyBytes: 0, screenshots: 0 }, prices)).toBe(0.015);
    expect(sessionCredits({ durationMs: 0, proxyBytes: 250_000_000, screenshots: 0 }, prices)).toBe(1);
    expect(sessionCredits({ durationMs: 0, proxyBytes: 0, screenshots: 7 }, prices)).toBe(0.007);
    expect(sessionCredits({ durationMs: 600_000, proxyBytes: 1e9, screenshots: 3 }, prices)).toBe(0.1 + 4 + 0.003);
  });

  it('the billing period is the calendar month in UTC', () => {
    expect(billingPeriod(new Date('2025-03-31T23:59:59.999Z'))).toEqual({ start: new Date('2025-03-01T00:00:00Z'), end: new Date('2025-04-01T00:00:00Z') });
    expect(billingPeriod(new Date('2025-12-15T00:00:00Z'))).toEqual({ start: new Date('2025-12-01T00:00:00Z'), end: new Date('2026-01-01T00:00:00Z') });
  });
});

describe('the account', () => {
  let db: Db;
  beforeAll(async () => {
    db = await openTestPglite();
  });
  afterAll(() => db.close());

  const at = async (projectId: string, credits: number, when: string, kind: 'session' | 'fetch' = 'fetch') => {
    await charge(db, { projectId, kind, credits, sessionId: kind === 'session' ? randomUUID() : undefined });
    await db.query('UPDATE usage_ledger SET created_at = $2 WHERE id = (SELECT id FROM usage_ledger WHERE project_id = $1 ORDER BY created_at DESC LIMIT 1)', [
      projectId,
      when,
    ]);
  };
  const config = { includedCredits: 10, costLimit: null, maxConcurrentBrowsers: 3 };

  it('included credits renew each period; usage beyond them spends the gift, once', async () => {
    const { projectId } = await createProject(db, { name: 'p', source: 'test', giftCredits: 5 });
    const now = new Date('2025-05-20T12:00:00Z');
    expect(await account(db, projectId, config, now)).toMatchObject({
      credits: 15,
      creditsUsed: 0,
      includedCredits: 10,
      giftCredits: 5,
      tier: 'self-hosted',
      maxConcurrentBrowsers: 3,
      costLimit: null,
    });
    // March: 12 used, 2 beyond the included 10 come from the gift. April: 4, within.
    await at(projectId, 12, '2025-03-10T00:00:00Z');
    await at(projectId, 4, '2025-04-30T23:59:59Z');
    expect(await account(db, projectId, config, now)).toMatchObject({ credits: 10 + 3, creditsUsed: 0 });
    // This month: 6 used.
    await at(projectId, 6, '2025-05-01T00:00:00Z', 'session');
    expect(await account(db, projectId, config, now)).toMatchObject({ credits: 4 + 3, creditsUsed: 6 });
    // Charges after `now` (a later period) do not count yet.
    await at(projectId, 100, '2025-06-02T00:00:00Z');
    expect((await account(db, projectId, config, now))!.credits).toBe(7);
  });

  it('agent-access projects have no included credits, only their gift', async () => {
    const { projectId } = await createProject(db, { name: 'agent', source: 'agent-access', giftCredits: 5 });
    await db.query(`UPDATE projects SET tier = 'agent-access' WHERE id = $1`, [projectId]);
    expect(await account(db, projectId, config)).toMatchObject({ credits: 5, includedCredits: 0, tier: 'agent-access' });
    await charge(db, { projectId, kind: 'fetch', credits: 4.995 });
    expect(await refuseUnpaid(db, projectId, config)).toBeUndefined();
    await charge(db, { projectId, kind: 'fetch', credits: FETCH_CREDITS });
    expect((await account(db, projectId, config))!.credits).toBe(0);
    expect(await refuseUnpaid(db, projectId, config)).toMatch(/insufficient credits/i);
  });

  it('the cost limit refuses once the period has used it, whatever the balance', async () => {
    const { projectId } = await createProject(db, { name: 'capped', source: 'test' });
    const capped = { ...config, includedCredits: 1000, costLimit: 1 };
    await charge(db, { projectId, kind: 'fetch', credits: 0.5 });
    expect(await refuseUnpaid(db, projectId, capped)).toBeUndefined();
    await charge(db, { projectId, kind: 'fetch', credits: 0.5 });
    expect(await refuseUnpaid(db, projectId, capped)).toMatch(/cost limit of 1/);
  });

  it('charges a session once', async () => {
    const { projectId } = await createProject(db, { name: 'once', source: 'test' });
    const sessionId = randomUUID();
    await charge(db, { projectId, kind: 'session', credits: 1, sessionId });
    await charge(db, { projectId, kind: 'session', credits: 1, sessionId });
    expect((await account(db, projectId, config))!.creditsUsed).toBe(1);
    await expect(charge(db, { projectId, kind: 'fetch', credits: -1 })).rejects.toThrow(RangeError);
  });
});
