import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryWorker, type DeliveryWorkerOptions } from './deliver.js';
import { emitEvent, emitEvents } from '../outbox/emit.js';
import { sampleEventData } from './samples.js';
import { generateSecret } from './signing.js';
import { createProject, insertWebhook, openTestDb, startReceiver, waitFor, type Receiver, type TestDb } from './test-support.js';
import { createWebhook, getEvent, listDeliveries, rotateWebhookSecret, sendTestEvent } from './webhooks-store.js';
import { openSecret, sealStoredSecrets } from './sealed-secrets.js';
import { sealer } from '../secrets/index.js';
import { randomBytes } from 'node:crypto';

let t: TestDb;
const workers: DeliveryWorker[] = [];
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await openTestDb();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(1000)));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});
afterAll(async () => {
  await t?.close();
});

async function worker(options: Partial<DeliveryWorkerOptions> = {}): Promise<DeliveryWorker> {
  // Loopback receivers: the operator's "allow private networks" is given explicitly.
  const w = new DeliveryWorker({
    db: t.db,
    secrets: t.secrets,
    signals: t.signals,
    allowPrivate: true,
    pollIntervalMs: 50,
    releaseLeasesOnStart: false,
    ...options,
  });
  await w.start();
  workers.push(w);
  return w;
}

async function receiver(handler?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(handler);
  receivers.push(r);
  return r;
}

interface Row {
  attempt: number;
  status: string;
  response_status: number | null;
  error_message: string | null;
  response_body: string | null;
  scheduled_at: Date;
  completed_at: Date | null;
}
const rowsOf = (eventId: string, webhookId?: string) =>
  t.db.query<Row>(
    `SELECT attempt, status, response_status, error_message, response_body, scheduled_at, completed_at
       FROM webhook_deliveries WHERE event_id = $1 ${webhookId ? 'AND webhook_id = $2' : ''} ORDER BY attempt`,
    webhookId ? [eventId, webhookId] : [eventId],
  );

describe('delivery', () => {
  it('posts the envelope, signed per Standard Webhooks, and records success', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const wh = await createWebhook(t.db, t.secrets, project, { url: rcv.url, subscribed_events: ['session.completed'] }, { allowPrivate: true });
    await worker();
    const data = sampleEventData('session.completed');
    const ev = await emitEvent(t.db, t.signals, project, 'session.completed', data);
    await waitFor(() => rcv.received.length === 1, 5000, 'the delivery');
    const got = rcv.received[0];
    expect(got.headers['webhook-id']).toBe(ev.id);
    expect(got.headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const payload = new Webhook(wh.secret).verify(got.body, got.headers as Record<string, string>);
    expect(payload).toEqual({ id: ev.id, type: 'session.completed', created: ev.created, project_id: project, text: expect.any(String), data });
    expect(() => new Webhook(generateSecret()).verify(got.body, got.headers as Record<string, string>)).toThrow();
    const rows = await waitFor(async () => {
      const r = await rowsOf(ev.id);
      return r[0]?.status === 'succeeded' ? r : null;
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ attempt: 1, status: 'succeeded', response_status: 200, error_message: null, response_body: 'ok' });
    expect(rows[0].completed_at).toBeInstanceOf(Date);
  });

  it('a receiver that fails and then recovers gets the event again; every attempt is recorded', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver((_req, _body, res, n) => {
      res.writeHead(n <= 2 ? 500 : 204);
      res.end(n <= 2 ? 'boom' : undefined);
    });
    const wh = await createWebhook(t.db, t.secrets, project, { url: rcv.url, subscribed_events: ['task.failed'] }, { allowPrivate: true });
    await worker({ retrySchedule: [100, 200, 300] });
    const ev = await emitEvent(t.db, t.signals, project, 'task.failed', sampleEventData('task.failed'));
    await waitFor(() => rcv.received.length === 3, 5000, 'three attempts');
    // webhook-id is stable across retries; each attempt is signed afresh.
    expect(new Set(rcv.received.map((r) => r.headers['webhook-id']))).toEqual(new Set([ev.id]));
    for (const r of rcv.received) new Webhook(wh.secret).verify(r.body, r.headers as Record<string, string>);
    expect(rcv.received[1].at - rcv.received[0].at).toBeGreaterThanOrEqual(70); // 100 ms ± 20 % jitter
    const rows = await waitFor(async () => {
      const r = await rowsOf(ev.id);
      return r.length === 3 && r[2].status === 'succeeded' ? r : null;
    });
    expect(rows.map((r) => [r.attempt, r.status, r.response_status, r.error_message])).toEqual([
      [1, 'failed', 500, 'Receiver answered 500'],
      [2, 'failed', 500, 'Receiver answered 500'],
      [3, 'succeeded', 204, null],
    ]);
    expect(rows[0].response_body).toBe('boom');
    // The deliveries listing shows the attempts, newest first.
    const page = await listDeliveries(t.db, project, wh.id, { page: 1, limit: 20 });
    expect(page!.data.map((d) => [d.attempt, d.status])).toEqual([
      [3, 'succeeded'],
      [2, 'failed'],
      [1, 'failed'],
    ]);
    // Negative: no fourth delivery after the success; a window one would fall in.
    await new Promise((r) => setTimeout(r, 400));
    expect(rcv.received).toHaveLength(3);
  });

  it('events emitted together reach each webhook once each, signed, in the order emitted (one at a time)', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const a = await insertWebhook(t.db, project, rcv.url.replace('/hook', '/a'), ['session.failed']);
    const b = await insertWebhook(t.db, project, rcv.url.replace('/hook', '/b'), ['session.failed']);
    await worker({ perWebhookConcurrency: 1 });
    const n = 100;
    const evs = await t.db.transaction((tx) =>
      emitEvents(
        tx,
        t.signals,
        Array.from({ length: n }, (_, i) => ({
          projectId: project,
          type: 'session.failed' as const,
          data: { ...sampleEventData('session.failed'), session_id: `s${i}` },
        })),
      ),
    );
    await waitFor(() => rcv.received.length >= 2 * n, 60_000, `${2 * n} deliveries`);
    // Negative: no delivery twice; a window a duplicate would fall in.
    await new Promise((r) => setTimeout(r, 200));
    expect(rcv.received).toHaveLength(2 * n);
    for (const [path, wh] of [
      ['/a', a],
      ['/b', b],
    ] as const) {
      const got = rcv.received.filter((r) => r.path === path);
      // One request at a time per webhook: exactly the order of emission.
      expect(got.map((r) => r.headers['webhook-id'])).toEqual(evs.map((e) => e.id));
      got.forEach((r, i) => {
        const payload = new Webhook(wh.secret).verify(r.body, r.headers as Record<string, string>) as { data: { session_id: string } };
        expect(payload.data.session_id).toBe(`s${i}`);
      });
    }
    await waitFor(
      async () => {
        const [{ n: pending }] = await t.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1 AND status <> 'succeeded'`,
          [project],
        );
        return pending === 0;
      },
      5000,
      'every delivery recorded as succeeded',
    );
  });

  it('a receiver failing some attempts gets each of many events once after retries', async () => {
    const project = await createProject(t.db);
    // The first attempt of every third event fails (500 or a dropped connection).
    let answered500 = 0;
    let dropped = 0;
    const rcv = await receiver((req, _body, res) => {
      const id = String(req.headers['webhook-id']);
      const seen = rcv.received.filter((r) => r.headers['webhook-id'] === id).length;
      const k = parseInt(id.slice(-1), 32) % 3;
      if (seen === 1 && k === 0) {
        answered500++;
        res.writeHead(500);
        res.end();
      } else if (seen === 1 && k === 1 && id.charCodeAt(id.length - 2) % 2 === 0) {
        dropped++;
        res.socket?.destroy();
      } else {
        res.writeHead(204);
        res.end();
      }
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['task.completed']);
    await worker({ retrySchedule: [50, 100, 200] });
    const n = 200;
    const evs = await emitEvents(
      t.db,
      t.signals,
      Array.from({ length: n }, () => ({ projectId: project, type: 'task.completed' as const, data: sampleEventData('task.completed') })),
    );
    const rows = await waitFor(
      async () => {
        const r = await t.db.query<{ event_id: string; attempt: number; status: string }>(
          `SELECT event_id, attempt, status FROM webhook_deliveries WHERE webhook_id = $1`,
          [wh.id],
        );
        return r.length > 0 && r.every((x) => x.status !== 'pending') ? r : null;
      },
      30_000,
      'every delivery settled',
    );
    const succeeded = rows.filter((r) => r.status === 'succeeded');
    expect(succeeded.map((r) => r.event_id).sort()).toEqual(evs.map((e) => e.id).sort());
    expect(rows.filter((r) => r.status === 'dead')).toEqual([]);
    // Every 500 is a failed attempt. A dropped connection is one too, unless it was a kept-alive
    // socket: the sender cannot tell a receiver's drop from a socket the receiver had just closed,
    // and sends the attempt again at once on a new connection (http-post.ts), so the receiver
    // sees that request twice with one webhook-id (Standard Webhooks receivers deduplicate by it).
    const retried = rows.filter((r) => r.status === 'failed').length;
    expect(answered500).toBeGreaterThan(n / 8);
    expect(retried).toBeGreaterThanOrEqual(answered500);
    expect(retried).toBeLessThanOrEqual(answered500 + dropped);
    expect(rows).toHaveLength(n + retried);
    // Every request was signed; each event was answered 2xx once, after its failures.
    for (const r of rcv.received) new Webhook(wh.secret).verify(r.body, r.headers as Record<string, string>);
    expect(new Set(rcv.received.map((r) => r.headers['webhook-id']))).toEqual(new Set(evs.map((e) => e.id)));
    expect(rcv.received).toHaveLength(n + answered500 + dropped);
  });

  it('marks a delivery dead after the last attempt of the schedule', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver((_req, _body, res) => {
      res.writeHead(503);
      res.end();
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['batch.failed']);
    await worker({ retrySchedule: [50, 50] });
    const ev = await emitEvent(t.db, t.signals, project, 'batch.failed', sampleEventData('batch.failed'));
    const rows = await waitFor(async () => {
      const r = await rowsOf(ev.id, wh.id);
      return r.length === 3 && r[2].status !== 'pending' ? r : null;
    });
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed', 'dead']);
    // Negative: no attempt after the dead one; a window past the retries' 50 ms a fourth would fall in.
    await new Promise((r) => setTimeout(r, 300));
    expect(rcv.received).toHaveLength(3);
    expect(await rowsOf(ev.id, wh.id)).toHaveLength(3);
  });

  it('honours Retry-After beyond the scheduled delay', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver((_req, _body, res, n) => {
      res.writeHead(n === 1 ? 429 : 200, n === 1 ? { 'retry-after': '1' } : {});
      res.end();
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['batch.failed']);
    await worker({ retrySchedule: [50] });
    const ev = await emitEvent(t.db, t.signals, project, 'batch.failed', sampleEventData('batch.failed'));
    await waitFor(() => rcv.received.length === 2, 5000, 'the retry');
    expect(rcv.received[1].at - rcv.received[0].at).toBeGreaterThanOrEqual(900);
    const rows = await rowsOf(ev.id, wh.id);
    expect(rows[0].response_status).toBe(429);
  });

  it('after rotate-secret signs with the new secret, and with the old one too during the grace period', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const wh = await createWebhook(t.db, t.secrets, project, { url: rcv.url, subscribed_events: ['identity.authenticated'] }, { allowPrivate: true });
    await worker();
    const rotated = await rotateWebhookSecret(t.db, t.secrets, project, wh.id);
    await emitEvent(t.db, t.signals, project, 'identity.authenticated', sampleEventData('identity.authenticated'));
    await waitFor(() => rcv.received.length === 1);
    const first = rcv.received[0];
    expect(String(first.headers['webhook-signature']).split(' ')).toHaveLength(2);
    new Webhook(rotated!.secret).verify(first.body, first.headers as Record<string, string>);
    new Webhook(wh.secret).verify(first.body, first.headers as Record<string, string>);

    // Once the grace period is over, only the new secret signs.
    await t.db.query(`UPDATE webhooks SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [wh.id]);
    await emitEvent(t.db, t.signals, project, 'identity.authenticated', sampleEventData('identity.authenticated'));
    await waitFor(() => rcv.received.length === 2);
    const second = rcv.received[1];
    expect(String(second.headers['webhook-signature']).split(' ')).toHaveLength(1);
    new Webhook(rotated!.secret).verify(second.body, second.headers as Record<string, string>);
    expect(() => new Webhook(wh.secret).verify(second.body, second.headers as Record<string, string>)).toThrow();
  });

  it('signing secrets are sealed at rest: neither column holds a secret, each opens only for its webhook; a rotation keeps both sealed', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const wh = await createWebhook(t.db, t.secrets, project, { url: rcv.url, subscribed_events: ['session.completed'] }, { allowPrivate: true });
    const rotated = (await rotateWebhookSecret(t.db, t.secrets, project, wh.id))!;
    const [row] = await t.db.query<{ secret: string; previous_secret: string }>('SELECT secret, previous_secret FROM webhooks WHERE id = $1', [wh.id]);
    const stored = JSON.stringify(row);
    for (const plain of [wh.secret, rotated.secret]) {
      expect(stored).not.toContain(plain);
      expect(stored).not.toContain(plain.slice('whsec_'.length));
    }
    expect(row.secret).toMatch(/^v1:/);
    expect(openSecret(t.secrets, wh.id, row.secret)).toBe(rotated.secret);
    expect(openSecret(t.secrets, wh.id, row.previous_secret)).toBe(wh.secret);
    // Copied onto another webhook's row, or read with another key, it does not open.
    expect(() => openSecret(t.secrets, 'wh_other', row.secret)).toThrow();
    expect(() => openSecret(sealer(randomBytes(32)), wh.id, row.secret)).toThrow();
  });

  it('secrets stored plain (before sealing) still sign; the start seals them once, and deliveries verify with the same secret', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const legacy = await insertWebhook(t.db, project, rcv.url, ['session.completed']);
    expect(await sealStoredSecrets(t.db, t.secrets)).toBeGreaterThanOrEqual(1);
    const [row] = await t.db.query<{ secret: string }>('SELECT secret FROM webhooks WHERE id = $1', [legacy.id]);
    expect(row.secret).toMatch(/^v1:/);
    expect(row.secret).not.toContain(legacy.secret.slice('whsec_'.length));
    // Sealed already: a second start (or another node) finds nothing of it to seal.
    const [again] = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhooks WHERE secret LIKE 'whsec%'");
    expect(again.n).toBe(0);
    expect(await sealStoredSecrets(t.db, t.secrets)).toBe(0);
    await worker();
    await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    await waitFor(() => rcv.received.length === 1);
    new Webhook(legacy.secret).verify(rcv.received[0].body, rcv.received[0].headers as Record<string, string>);
  });

  it('a secret that does not open (altered in the database) sends nothing unsigned: the attempt fails with the reason', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const wh = await createWebhook(t.db, t.secrets, project, { url: rcv.url, subscribed_events: ['session.completed'] }, { allowPrivate: true });
    await t.db.query('UPDATE webhooks SET secret = $2 WHERE id = $1', [wh.id, sealer(randomBytes(32)).seal(wh.secret, `webhook:${wh.id}:signing-secret`)]);
    await worker({ retrySchedule: [60_000] });
    await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    const failed = await waitFor(async () => {
      const rows = await t.db.query<{ status: string; error_message: string | null }>(
        'SELECT d.status, d.error_message FROM webhook_deliveries d WHERE d.webhook_id = $1 AND d.error_message IS NOT NULL',
        [wh.id],
      );
      return rows[0];
    });
    expect(failed.error_message).toMatch(/signing secret could not be read/);
    expect(rcv.received).toHaveLength(0);
    // Rotating mends it: the new secret signs, and the unreadable one (now the previous) is left out.
    const rotated = (await rotateWebhookSecret(t.db, t.secrets, project, wh.id))!;
    await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    await waitFor(() => rcv.received.length === 1);
    const mended = rcv.received[0];
    expect(String(mended.headers['webhook-signature']).split(' ')).toHaveLength(1);
    new Webhook(rotated.secret).verify(mended.body, mended.headers as Record<string, string>);
  });

  it('a test event reaches the receiver, valid and signed, even with no subscription to its type', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const wh = await createWebhook(t.db, t.secrets, project, { url: rcv.url, subscribed_events: ['batch.completed'] }, { allowPrivate: true });
    await worker();
    const r = await sendTestEvent(t.db, t.signals, project, wh.id, 'task.completed');
    await waitFor(() => rcv.received.length === 1);
    const payload = new Webhook(wh.secret).verify(rcv.received[0].body, rcv.received[0].headers as Record<string, string>);
    expect(payload).toEqual(await getEvent(t.db, project, r!.event_id));
    expect(payload).toMatchObject({ id: r!.event_id, type: 'task.completed' });
  });

  it('does not follow redirects', async () => {
    const project = await createProject(t.db);
    const target = await receiver();
    const redirector = await receiver((_req, _body, res) => {
      res.writeHead(307, { location: target.url });
      res.end();
    });
    const wh = await insertWebhook(t.db, project, redirector.url, ['session.failed']);
    await worker({ retrySchedule: [60_000] });
    const ev = await emitEvent(t.db, t.signals, project, 'session.failed', sampleEventData('session.failed'));
    const rows = await waitFor(async () => {
      const r = await rowsOf(ev.id, wh.id);
      return r[0]?.status === 'failed' ? r : null;
    });
    expect(rows[0]).toMatchObject({ response_status: 307 });
    expect(rows[0].error_message).toMatch(/Redirect \(307 to http:\/\/127\.0\.0\.1:\d+\/hook\) not followed/);
    expect(rows[1]).toMatchObject({ attempt: 2, status: 'pending' });
    expect(target.received).toHaveLength(0);
  });

  it('reads only a small part of a huge response body', async () => {
    const project = await createProject(t.db);
    let bytesSent = 0;
    const rcv = await receiver(async (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'a');
      for (let i = 0; i < 2000 && !res.destroyed; i++) {
        bytesSent += chunk.length;
        if (!res.write(chunk)) {
          await new Promise<void>((r) => {
            const go = () => {
              res.off('drain', go);
              res.off('close', go);
              r();
            };
            res.on('drain', go);
            res.on('close', go);
          });
        }
      }
      res.end();
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['session.failed']);
    await worker();
    const ev = await emitEvent(t.db, t.signals, project, 'session.failed', sampleEventData('session.failed'));
    const rows = await waitFor(async () => {
      const r = await rowsOf(ev.id, wh.id);
      return r[0]?.status === 'succeeded' ? r : null;
    });
    expect(rows[0].response_body).toHaveLength(1024);
    expect(bytesSent).toBeLessThan(16 * 1024 * 1024); // far from the 125 MiB it would send
  });

  it('gives up on a receiver that does not answer in time, and retries', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver(() => {
      /* never answers */
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['session.failed']);
    await worker({ requestTimeoutMs: 300, leaseMs: 2000, retrySchedule: [100] });
    const ev = await emitEvent(t.db, t.signals, project, 'session.failed', sampleEventData('session.failed'));
    const rows = await waitFor(async () => {
      const r = await rowsOf(ev.id, wh.id);
      return r.length === 2 && r[1].status === 'dead' ? r : null;
    });
    expect(rows[0]).toMatchObject({ status: 'failed', response_status: null, error_message: 'Timed out after 300 ms' });
    expect(rcv.received).toHaveLength(2);
  });

  it("a backlog many times a webhook's share drains from claims alone, with no poll to fall back on", async () => {
    // The worker holds at most 512 rows of one fast webhook, so 2,000 take several claims, each
    // asked for as the buffer runs low. A claim that read as "nothing more due" (requests
    // finishing while it ran raised the webhook's cap past what it was given) left the rest
    // to the next poll; here there is none, so such a stall never ends.
    const project = await createProject(t.db);
    const r = await receiver();
    await insertWebhook(t.db, project, r.url, ['session.completed']);
    for (let i = 0; i < 2000; i += 500) {
      const group = Array.from({ length: 500 }, () => ({ projectId: project, type: 'session.completed' as const, data: sampleEventData('session.completed') }));
      await t.db.transaction((tx) => emitEvents(tx, t.signals, group));
    }
    const w = await worker({ pollIntervalMs: 3_600_000 });
    await waitFor(() => r.received.length >= 2000, 60_000, 'the whole backlog');
    await w.stop(5000);
    expect(new Set(r.received.map((x) => x.headers['webhook-id'])).size).toBe(2000);
    const [{ pending }] = await t.db.query<{ pending: number }>(
      `SELECT count(*)::int AS pending FROM webhook_deliveries WHERE project_id = $1 AND status <> 'succeeded'`,
      [project],
    );
    expect(pending).toBe(0);
  }, 90_000);

  it('events for another webhook are claimed while one webhook drains a large backlog', async () => {
    const project = await createProject(t.db);
    const busy = await receiver();
    const other = await receiver();
    await insertWebhook(t.db, project, busy.url, ['session.completed']);
    await insertWebhook(t.db, project, other.url, ['session.failed']);
    for (let i = 0; i < 3000; i += 500) {
      const group = Array.from({ length: 500 }, () => ({ projectId: project, type: 'session.completed' as const, data: sampleEventData('session.completed') }));
      await t.db.transaction((tx) => emitEvents(tx, t.signals, group));
    }
    await worker({ pollIntervalMs: 3_600_000 });
    await waitFor(() => busy.received.length >= 300, 30_000, 'the backlog to be draining');
    for (let i = 0; i < 5; i++) await emitEvent(t.db, t.signals, project, 'session.failed', sampleEventData('session.failed'));
    await waitFor(() => other.received.length === 5, 60_000, 'the other webhook');
    // The other webhook's events did not wait for the backlog ahead of them to drain.
    expect(busy.received.length).toBeLessThan(3000);
    await waitFor(() => busy.received.length >= 3000, 60_000, 'the whole backlog');
  }, 150_000);

  it('a slow receiver does not stall deliveries to another webhook', async () => {
    const project = await createProject(t.db);
    const slow = await receiver(() => {
      /* hangs until the deadline */
    });
    const fast = await receiver();
    await insertWebhook(t.db, project, slow.url, ['session.completed']);
    await insertWebhook(t.db, project, fast.url, ['session.failed']);
    await worker({ concurrency: 8, perWebhookConcurrency: 3, slowWebhookConcurrency: 1, requestTimeoutMs: 3000, leaseMs: 8000 });
    for (let i = 0; i < 30; i++) await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    await waitFor(() => slow.received.length >= 3, 3000, 'the slow receiver to be busy');
    const started = performance.now();
    for (let i = 0; i < 20; i++) await emitEvent(t.db, t.signals, project, 'session.failed', sampleEventData('session.failed'));
    await waitFor(() => fast.received.length === 20, 2500, 'the fast receiver');
    expect(performance.now() - started).toBeLessThan(2500);
    expect(slow.received.length).toBeLessThanOrEqual(3); // at most its in-flight share
  });

  it('refuses private targets at delivery time unless allowed (DNS rebinding)', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    // Stored as if it had passed the check at creation; it points at loopback now.
    const literal = await insertWebhook(t.db, project, rcv.url, ['task.cancelled']);
    const named = await insertWebhook(t.db, project, `http://localhost:${rcv.port}/hook`, ['task.cancelled']);
    await worker({ allowPrivate: false, retrySchedule: [60_000] });
    const ev = await emitEvent(t.db, t.signals, project, 'task.cancelled', sampleEventData('task.cancelled'));
    for (const wh of [literal, named]) {
      const rows = await waitFor(async () => {
        const r = await rowsOf(ev.id, wh.id);
        return r[0]?.status === 'failed' ? r : null;
      });
      expect(rows[0].error_message).toMatch(/private networks are not allowed/);
      expect(rows[0].response_status).toBeNull();
    }
    expect(rcv.received).toHaveLength(0);
  });

  it('pauses deliveries of a disabled webhook and sends them once it is enabled again', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    const wh = await insertWebhook(t.db, project, rcv.url, ['batch.completed']);
    await worker();
    await t.db.query('UPDATE webhooks SET enabled = false WHERE id = $1', [wh.id]);
    // Queued while enabled...
    const ev = await t.db.transaction(async (tx) => {
      await tx.query('UPDATE webhooks SET enabled = true WHERE id = $1', [wh.id]);
      const e = await emitEvent(tx, t.signals, project, 'batch.completed', sampleEventData('batch.completed'));
      await tx.query('UPDATE webhooks SET enabled = false WHERE id = $1', [wh.id]);
      return e;
    });
    // Negative: nothing is delivered to the disabled webhook; a window a delivery would fall in.
    await new Promise((r) => setTimeout(r, 300));
    expect(rcv.received).toHaveLength(0);
    await t.db.query('UPDATE webhooks SET enabled = true WHERE id = $1', [wh.id]);
    await waitFor(() => rcv.received.length === 1);
    expect(rcv.received[0].headers['webhook-id']).toBe(ev.id);
  });

  it('never holds a transaction, so request transactions run beside it (PGlite has one connection)', async () => {
    const project = await createProject(t.db);
    // The first attempt of every third event fails: records and reschedules happen too.
    const seen = new Map<string, number>();
    const rcv = await receiver((req, _body, res) => {
      const id = String(req.headers['webhook-id']);
      if (!seen.has(id)) seen.set(id, seen.size);
      const first = rcv.received.filter((r) => r.headers['webhook-id'] === id).length === 1;
      res.writeHead(first && seen.get(id)! % 3 === 0 ? 500 : 200);
      res.end();
    });
    await insertWebhook(t.db, project, rcv.url, ['session.completed']);
    await worker({ retrySchedule: [20, 20, 20, 20] });
    // A request-like loop: each event in its own transaction, one after another, while the
    // worker claims and records.
    for (let i = 0; i < 150; i++) {
      await t.db.transaction(async (tx) => {
        await tx.query('SELECT 1');
        await emitEvent(tx, t.signals, project, 'session.completed', sampleEventData('session.completed'));
        await new Promise((r) => setImmediate(r));
      });
    }
    await waitFor(
      async () => {
        const [{ n }] = await t.db.query<{ n: number }>(
          `SELECT count(DISTINCT event_id)::int AS n FROM webhook_deliveries WHERE project_id = $1 AND status = 'succeeded'`,
          [project],
        );
        return n === 150;
      },
      15_000,
      'all 150 delivered',
    );
  });

  it('several workers on one database deliver each attempt once', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver();
    await insertWebhook(t.db, project, rcv.url, ['session.completed']);
    await insertWebhook(t.db, project, rcv.url.replace('/hook', '/other'), ['session.completed']);
    await Promise.all([worker({ concurrency: 4 }), worker({ concurrency: 4 }), worker({ concurrency: 4 })]);
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push((await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'))).id);
    await waitFor(() => rcv.received.length >= 120, 10_000, '120 deliveries');
    // Negative: no attempt delivered twice by two workers; a window a duplicate would fall in.
    await new Promise((r) => setTimeout(r, 200));
    expect(rcv.received).toHaveLength(120);
    const pairs = new Set(rcv.received.map((r) => `${r.path} ${r.headers['webhook-id']}`));
    expect(pairs.size).toBe(120);
    expect(new Set(rcv.received.map((r) => r.headers['webhook-id']))).toEqual(new Set(ids));
  });

  it('stop() waits for requests in flight and records them', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver((_req, _body, res) => {
      setTimeout(() => res.end('late'), 300);
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['session.completed']);
    const w = await worker();
    const ev = await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    await waitFor(() => rcv.received.length === 1);
    await w.stop(5000);
    const rows = await rowsOf(ev.id, wh.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'succeeded', response_body: 'late' });
  });

  it('stop() past its grace aborts and releases the row for the next worker', async () => {
    const project = await createProject(t.db);
    const rcv = await receiver(() => {
      /* never answers */
    });
    const wh = await insertWebhook(t.db, project, rcv.url, ['session.completed']);
    const w = await worker();
    const ev = await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    await waitFor(() => rcv.received.length === 1);
    await w.stop(100);
    const [row] = await t.db.query<{ status: string; locked_by: string | null; attempt: number }>(
      'SELECT status, locked_by, attempt FROM webhook_deliveries WHERE event_id = $1 AND webhook_id = $2',
      [ev.id, wh.id],
    );
    expect(row).toEqual({ status: 'pending', locked_by: null, attempt: 1 });
    rcv.setHandler((_req, _body, res) => {
      res.end();
    });
    await worker();
    await waitFor(() => rcv.received.length === 2);
  });
});
