// PostgreSQL goes away under load and comes back: a PostgreSQL of the test's own (never the
// shared one) is crashed (pg_ctl stop -m immediate) while sessions run, a webhook delivery
// waits for its retry and a batch drains. While it is down: the API answers 503 with the
// general error body (a DELETE too, which changes nothing: its key cannot be checked),
// /healthz answers 503 unavailable, the process survives, and sessions
// that end (a client's Browser.close, a Chromium killed) lose their browser at once. Once it
// is back: the API answers within seconds without a restart, every session's end is
// recorded, billed and evented exactly once, the batch ends with every item counted, each
// event reaches the receiver once, and no Chromium is left.
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, getBatch, until } from '../batches/test-support.js';
import { browsersDirFor, createSession, HEADLESS, processesUnder, roots, sessionEvents } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { ownPostgresUnavailable, startOwnPostgres, type OwnPostgres } from '../testing/own-postgres.js';

const skip = ownPostgresUnavailable();
if (skip) console.log(`outage.test.ts skipped: ${skip}`);

/** Sends one CDP command on the browser's own target through the session's cdp_url. */
async function cdpCommand<T>(cdpUrl: string, method: string): Promise<T> {
  const ws = new WebSocket(cdpUrl);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  try {
    const answer = new Promise<T>((resolve, reject) => {
      ws.on('message', (data) => {
        const m = JSON.parse(data.toString()) as { id?: number; result?: T; error?: unknown };
        if (m.id === 1) m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m.result as T);
      });
      ws.once('close', () => reject(new Error(`${method}: the CDP socket closed`)));
    });
    ws.send(JSON.stringify({ id: 1, method }));
    // Browser.close is answered, or the socket just closes as the browser goes.
    return method === 'Browser.close' ? await Promise.race([answer.catch(() => ({}) as T), sleep(5_000).then(() => ({}) as T)]) : await answer;
  } finally {
    ws.close();
  }
}

describe.skipIf(skip !== undefined)('PostgreSQL restarted under load', () => {
  let pgsql: OwnPostgres;
  let server: TestServer;
  let receiver: Receiver;
  /** The batch items' initial_url: the second request is held until the database is down. */
  let pages: ReturnType<typeof createServer>;
  let pageUrl: string;
  let pageRequests = 0;
  let held: ServerResponse | undefined;
  let onHeld: (() => void) | undefined;
  const logs: string[] = [];
  /** Receiver answers 200 by event id (webhook-id); first attempts of each event fail. */
  const delivered = new Map<string, number>();
  const attempted = new Set<string>();

  beforeAll(async () => {
    pgsql = await startOwnPostgres();
    // The first attempt of every event fails (500): its retry comes about 5 s later, so
    // deliveries wait across the outage.
    receiver = await startReceiver((req, _body, res) => {
      const id = String(req.headers['webhook-id']);
      if (!attempted.has(id)) {
        attempted.add(id);
        res.writeHead(500).end();
        return;
      }
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
    pages = createServer((req, res) => {
      // Only the page counts (a browser also asks for /favicon.ico).
      if (req.url !== '/item') return void res.writeHead(404).end();
      if (++pageRequests === 2) {
        held = res;
        onHeld?.();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>item</title>');
    });
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    pageUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}/item`;
    server = await startTestServer({ env: { DATABASE_URL: pgsql.url, BATCH_CONCURRENCY: '1', LOG_LEVEL: 'info' }, logs });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    held?.destroy();
    pages?.closeAllConnections();
    await new Promise((r) => pages?.close(r));
    await pgsql?.remove();
  }, 60_000);

  it('answers 503 while it is down, reconnects by itself, and loses no end, charge or event', async () => {
    const browsersDir = browsersDirFor(server.config.dataDir);
    const hook = await call(server, 'POST', '/v1/webhooks', {
      url: receiver.url,
      subscribed_events: ['session.completed', 'session.failed', 'batch.completed', 'batch.failed'],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);

    // Before: one session ended (its event's delivery fails once, then waits for its retry),
    // two running, and a batch of three draining one item at a time, the second item's
    // session starting (its initial_url held) when the database goes.
    const [before, closed, killed] = await Promise.all([createSession(server, HEADLESS), createSession(server, HEADLESS), createSession(server, HEADLESS)]);
    expect((await call(server, 'DELETE', `/v1/sessions/${before.id}`)).status).toBe(200);
    const heldNow = new Promise<void>((r) => (onHeld = r));
    const batch = await call(server, 'POST', '/v1/batch-sessions', {
      count: 3,
      configuration: { ...HEADLESS, session: { ...HEADLESS.session, initial_url: pageUrl } },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    const batchId = batch.body.data.batch_id as string;
    await heldNow;
    const draining = await getBatch(server, batchId);
    expect(draining.completed_requests).toBe(1);
    const firstItem = draining.sessions[0].session_id as string;
    const killedPid = (await cdpCommand<{ processInfo: { type: string; id: number }[] }>(killed.cdp_url, 'SystemInfo.getProcessInfo')).processInfo.find(
      (p) => p.type === 'browser',
    )!.id;

    await pgsql.crash();
    const downAt = Date.now();
    // The second item's page loads now: its session cannot be marked running.
    held!.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>item</title>');

    // While it is down: the general error body with 503, and /healthz unavailable.
    const list = await server.request('/v1/sessions');
    expect(list.status).toBe(503);
    expect(list.headers.get('retry-after')).toMatch(/^\d+$/);
    const listBody = (await list.json()) as { error: { code: number; message: string } };
    expect(listBody).toEqual({ error: { code: 503, message: expect.stringMatching(/database is unavailable/) } });
    const created = await call(server, 'POST', '/v1/sessions', HEADLESS);
    expect(created.status, JSON.stringify(created.body)).toBe(503);
    expect(created.body.error.code).toBe(503);
    // A DELETE cannot even authenticate its key: 503, and nothing changes.
    const deleted = await call(server, 'DELETE', `/v1/sessions/${firstItem}`);
    expect([deleted.status, deleted.body.error?.code]).toEqual([503, 503]);
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { status: string }).status).toBe('unavailable');

    // Sessions end meanwhile: a client closes its browser, another browser dies. Their
    // browsers go at once; their ends wait for the database.
    await cdpCommand(closed.cdp_url, 'Browser.close');
    process.kill(killedPid, 'SIGKILL');
    await until(
      async () => roots(browsersDir).filter((r) => r.owner.sessionId === closed.id || r.owner.sessionId === killed.id).length,
      (n) => n === 0,
      15_000,
      100,
    );
    // Down long enough for the retry of `before`'s event to come due, and for the ends'
    // first retries to fail.
    await sleep(Math.max(0, 6_000 - (Date.now() - downAt)));
    expect((await server.request('/v1/sessions')).status).toBe(503);

    await pgsql.start();
    const backAt = Date.now();
    await until(
      () => server.request('/v1/sessions').then((r) => r.status),
      (s) => s === 200,
      15_000,
      100,
    );
    const reconnectMs = Date.now() - backAt;
    console.log(`API answered ${reconnectMs} ms after PostgreSQL accepted connections again (down ${backAt - downAt} ms)`);
    expect(reconnectMs).toBeLessThan(10_000);

    // The ends made during the outage are recorded with their reasons.
    const row = async (id: string) => (await call(server, 'GET', `/v1/sessions/${id}`)).body.data;
    const closedRow = await until(
      () => row(closed.id),
      (r) => r.status !== 'running',
      15_000,
    );
    expect([closedRow.status, closedRow.end_reason]).toEqual(['completed', 'browser_closed']);
    const killedRow = await until(
      () => row(killed.id),
      (r) => r.status !== 'running',
      15_000,
    );
    expect([killedRow.status, killedRow.end_reason]).toEqual(['failed', 'browser_unreachable']);

    expect((await row(firstItem)).status).toBe('running');
    // The batch resumes and counts every item; an item interrupted by the outage is queued again.
    const ended = await until(
      () => getBatch(server, batchId),
      (b) => b.status !== 'pending',
      60_000,
    );
    expect([ended.status, ended.completed_requests, ended.failed_requests]).toEqual(['completed', 3, 0]);

    // End everything still running, then account for every session.
    expect((await call(server, 'DELETE', '/v1/sessions/all')).status).toBe(200);
    const sessions = await server.db.query<{ id: string; status: string; ended_at: Date | null; credits_used: number }>(
      'SELECT id, status, ended_at, credits_used FROM sessions',
    );
    // before, closed, killed, three batch items, and the session of the interrupted item
    // (ended launch_failed) before the item was queued again.
    expect(sessions.length).toBe(7);
    const reasons = await server.db.query<{ end_reason: string; n: number }>(
      'SELECT end_reason, count(*)::int AS n FROM sessions GROUP BY end_reason ORDER BY end_reason',
    );
    const waited = logs.filter((l) => l.includes('retrying until it is back')).map((l) => (JSON.parse(l) as { msg: string }).msg.split(':')[0]);
    console.log(`sessions by end reason: ${JSON.stringify(reasons)}; waited for the database: ${JSON.stringify(waited)}`);
    expect(reasons.find((r) => r.end_reason === 'launch_failed')?.n).toBe(1);
    for (const s of sessions) expect(s.ended_at, `session ${s.id} has not ended`).not.toBeNull();
    const charges = await server.db.query<{ session_id: string; n: number; credits: number }>(
      `SELECT session_id, count(*)::int AS n, sum(credits)::float8 AS credits FROM usage_ledger WHERE kind = 'session' GROUP BY session_id`,
    );
    const chargeOf = new Map(charges.map((c) => [c.session_id, c]));
    const eventIds: string[] = [];
    for (const s of sessions) {
      const events = await sessionEvents(server.db, s.id);
      expect(
        events.map((e) => e.type),
        `end events of ${s.id}`,
      ).toHaveLength(1);
      eventIds.push(events[0].id);
      const charge = chargeOf.get(s.id);
      if (s.credits_used > 0) expect([charge?.n, charge?.credits]).toEqual([1, s.credits_used]);
      else expect(charge).toBeUndefined();
    }
    const [batchEvent] = await server.db.query<{ id: string }>(`SELECT id FROM events WHERE type LIKE 'batch.%' AND data->>'batch_id' = $1`, [batchId]);
    eventIds.push(batchEvent.id);

    // Every event reaches the receiver, once (its first attempt was refused on purpose).
    await until(
      async () => eventIds.filter((id) => delivered.has(id)).length,
      (n) => n === eventIds.length,
      30_000,
    );
    for (const id of eventIds) expect(delivered.get(id), `deliveries of ${id}`).toBe(1);

    // No browser without a row, no row without a browser.
    expect(processesUnder(browsersDir)).toEqual([]);
    expect(roots(browsersDir)).toEqual([]);
    expect(logs.some((l) => l.includes('database unavailable'))).toBe(true);
    expect(logs.some((l) => l.includes('database available again'))).toBe(true);
  }, 150_000);
});
