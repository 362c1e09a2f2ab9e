// When the delivery worker refreshes the planner's statistics (PlannerStats, delivery-claim.ts):
// for a claim slow for the rows it took, not for one merely large, and not at its first claim.
// On a real PGlite database: an ANALYZE shows as the table's row estimate (pg_class.reltuples)
// going from "never counted" to the rows it has.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignals } from '../capability/index.js';
import { emitEvent } from '../outbox/emit.js';
import type { Db } from '../store/db.js';
import { openTestPglite } from '../testing/pglite-template.js';
import { looksLikeBadPlan, PlannerStats } from './delivery-claim.js';
import { sampleEventData } from './samples.js';
import { createProject, insertWebhook, waitFor } from './test-support.js';

/** This file's own signals, as a server's: nothing here listens (no worker in this process). */
const signals = createSignals();

let db: Db;
beforeAll(async () => {
  db = await openTestPglite();
});
afterAll(async () => {
  await db?.close();
});

const logger = { warn: () => {}, error: () => {} };
const estimate = async () =>
  Number((await db.query<{ reltuples: number }>(`SELECT reltuples FROM pg_class WHERE relname = 'webhook_deliveries'`))[0].reltuples);

describe('the planner statistics of the delivery claim', () => {
  it('a claim is a bad plan when slow for its rows: not when merely large, nor when short', () => {
    // A backlog's drain on 2 cores: 250 rows in 10.6 ms.
    expect(looksLikeBadPlan(10.6, 250, Infinity)).toBe(false);
    expect(looksLikeBadPlan(10.6, 250, 0.04)).toBe(false);
    // The same claim scanning a long backlog.
    expect(looksLikeBadPlan(100, 250, 0.04)).toBe(true);
    expect(looksLikeBadPlan(100, 250, Infinity)).toBe(true);
    // Four times the best row seen, though under the absolute bound.
    expect(looksLikeBadPlan(45, 250, 0.04)).toBe(true);
    // Nothing taken, and slow: the scan found nothing worth its time.
    expect(looksLikeBadPlan(15, 0, 0.04)).toBe(true);
    // Quick claims never are, whatever their rows.
    expect(looksLikeBadPlan(9, 1, 0.04)).toBe(false);
  });

  it('refreshes for a bad plan only: not at the first claim, not for a large one', async () => {
    const project = await createProject(db);
    await insertWebhook(db, project, 'http://127.0.0.1:9/hook', ['session.completed']);
    for (let i = 0; i < 30; i++) await db.transaction((tx) => emitEvent(tx, signals, project, 'session.completed', sampleEventData('session.completed')));
    const before = await estimate();
    expect(before).toBeLessThan(30);

    const stats = new PlannerStats(db, logger);
    stats.maybeAnalyze(12, 300);
    stats.maybeAnalyze(11, 280);
    // A refresh would have shown by now (it takes a few ms here).
    await new Promise((r) => setTimeout(r, 300));
    expect(await estimate()).toBe(before);

    stats.maybeAnalyze(90, 280);
    await waitFor(async () => (await estimate()) === 30, 10_000, 'the statistics refreshed');
  });
});
