// PGlite's leases in memory (LocalLeases, delivery-claim.ts), on a real PGlite database with
// the worker's own claim and record statements: a row leased by one claim is not read by the
// next, a lease that ran out is taken again, and a late outcome of a lease no longer held is
// not recorded, as with a lease in the row.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignals } from '../capability/index.js';
import { emitEvent } from '../outbox/emit.js';
import type { Db } from '../store/db.js';
import { openTestPglite } from '../testing/pglite-template.js';
import { anyDue, claimDue, localLeases, type Claimed } from './delivery-claim.js';
import { recordOutcomes } from './delivery-record.js';
import { sampleEventData } from './samples.js';
import { createProject, insertWebhook } from './test-support.js';

/** This file's own signals, as a server's: nothing here listens (no worker in this process). */
const signals = createSignals();

let db: Db;
beforeAll(async () => {
  db = await openTestPglite();
});
afterAll(async () => {
  await db?.close();
});

const params = (token: string, leaseMs: number) => ({ saturated: [], room: 10, open: [], defaultCap: 10, token, leaseMs });
const ok = { ok: true, status: 204, error: null, body: '', retryAfterMs: null, durationMs: 3, aborted: false } as const;
const retry = { schedule: [1000], random: Math.random };

describe('leases of a PGlite database, in memory', () => {
  it('keeps a leased row from the next claim until its outcome is written or its lease runs out', async () => {
    const leases = localLeases(db)!;
    expect(localLeases(db)).toBe(leases);
    const project = await createProject(db);
    await insertWebhook(db, project, 'http://127.0.0.1:9/hook', ['session.completed']);
    const event = await emitEvent(db, signals, project, 'session.completed', sampleEventData('session.completed'));

    const [first, ...none] = await claimDue(db, params('a', 300), leases);
    expect(none).toEqual([]);
    expect(first).toMatchObject({ event_id: event.id, attempt: 1 });
    // Read, not written: the row itself carries no lease.
    expect(await db.query('SELECT locked_by, locked_until FROM webhook_deliveries WHERE id = $1', [first.id])).toEqual([
      { locked_by: null, locked_until: null },
    ]);
    expect(await claimDue(db, params('b', 300), leases)).toEqual([]);
    expect(await anyDue(db, leases)).toBe(false);

    // The lease runs out: the row is due again, and the next claim takes it.
    // The expiry is what is tested (a 300 ms lease): just past it, not polled.
    await new Promise((r) => setTimeout(r, 350));
    expect(await anyDue(db, leases)).toBe(true);
    const [again] = await claimDue(db, params('c', 60_000), leases);
    expect(again.id).toBe(first.id);

    // The first claim's late outcome is not recorded; the holder's is, with when it started.
    const late = await recordOutcomes(db, [{ claim: { ...first, token: 'a' } as Claimed, result: ok }], retry, leases);
    expect(late.statuses).toEqual([]);
    expect((await db.query<{ status: string }>('SELECT status FROM webhook_deliveries WHERE id = $1', [first.id]))[0].status).toBe('pending');
    const held = await recordOutcomes(db, [{ claim: { ...again, token: 'c' } as Claimed, result: ok }], retry, leases);
    expect(held.statuses).toEqual(['succeeded']);
    const [row] = await db.query<{ status: string; started_at: Date | null; response_status: number }>(
      'SELECT status, started_at, response_status FROM webhook_deliveries WHERE id = $1',
      [first.id],
    );
    expect(row).toMatchObject({ status: 'succeeded', response_status: 204 });
    expect(row.started_at).toBeInstanceOf(Date);
    expect(leases.held()).toEqual([]);
  });

  it('gives a row back unsent without a statement: the next claim takes it at once', async () => {
    const leases = localLeases(db)!;
    const project = await createProject(db);
    await insertWebhook(db, project, 'http://127.0.0.1:9/hook', ['session.failed']);
    await emitEvent(db, signals, project, 'session.failed', sampleEventData('session.failed'));
    const [row] = await claimDue(db, params('d', 60_000), leases);
    const unsent = { ok: false, status: null, error: null, body: null, retryAfterMs: null, durationMs: 0, aborted: true } as const;
    await recordOutcomes(db, [{ claim: { ...row, token: 'd' } as Claimed, result: unsent }], retry, leases);
    const [next] = await claimDue(db, params('e', 60_000), leases);
    expect(next.id).toBe(row.id);
  });
});
