import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitEvent } from '../outbox/emit.js';
import { sampleEventData } from './samples.js';
import { createProject, openTestDb, type TestDb } from './test-support.js';
import { openSecret } from './sealed-secrets.js';
import { EVENT_TYPES } from '../outbox/types.js';
import { validateDeliveryQuery, WebhookError, type WebhookPolicy } from './webhooks-logic.js';
import {
  createWebhook,
  deleteWebhook,
  getEvent,
  getWebhook,
  listDeliveries,
  listWebhooks,
  rotateWebhookSecret,
  sendTestEvent,
  updateWebhook,
} from './webhooks-store.js';

let t: TestDb;
beforeAll(async () => {
  t = await openTestDb();
});
afterAll(async () => {
  await t?.close();
});

// A resolver standing in for public DNS, so no test depends on the network.
const publicDns: WebhookPolicy = { allowPrivate: false, resolve: async () => ['93.184.215.14'] };
const body = (over: Record<string, unknown> = {}) => ({
  url: 'https://receiver.example.com/hooks',
  subscribed_events: ['session.completed'],
  ...over,
});

async function expectError(p: Promise<unknown>, status: number, code: string, message?: RegExp) {
  const err = await p.then(
    () => null,
    (e) => e,
  );
  expect(err).toBeInstanceOf(WebhookError);
  expect((err as WebhookError).status).toBe(status);
  expect((err as WebhookError).code).toBe(code);
  if (message) expect((err as Error).message).toMatch(message);
}

describe('create', () => {
  it('answers the webhook with a whsec_ secret the standardwebhooks library accepts', async () => {
    const project = await createProject(t.db);
    const wh = await createWebhook(
      t.db,
      t.secrets,
      project,
      body({ description: 'prod', subscribed_events: ['task.failed', 'task.failed', 'batch.completed'] }),
      publicDns,
    );
    expect(wh).toMatchObject({
      project_id: project,
      url: 'https://receiver.example.com/hooks',
      description: 'prod',
      subscribed_events: ['task.failed', 'batch.completed'],
      enabled: true,
    });
    expect(wh.id).toMatch(/^wh_/);
    expect(wh.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(() => new Webhook(wh.secret)).not.toThrow();
    expect(new Date(wh.created_at).toISOString()).toBe(wh.created_at);
    expect(await getWebhook(t.db, project, wh.id)).not.toHaveProperty('secret');
  });

  it('accepts http and https only', async () => {
    const project = await createProject(t.db);
    await expectError(createWebhook(t.db, t.secrets, project, body({ url: 'ftp://receiver.example.com/' }), publicDns), 400, 'invalid_url', /http or https/);
    await expectError(createWebhook(t.db, t.secrets, project, body({ url: 'not a url' }), publicDns), 400, 'invalid_url');
    await expectError(createWebhook(t.db, t.secrets, project, body({ url: 42 }), publicDns), 400, 'invalid_url');
    await expectError(createWebhook(t.db, t.secrets, project, { subscribed_events: ['task.failed'] }, publicDns), 400, 'invalid_url', /required/);
  });

  it('refuses private, loopback and link-local targets unless the operator allows them', async () => {
    const project = await createProject(t.db);
    for (const url of [
      'http://127.0.0.1:8080/',
      'http://[::1]/',
      'http://169.254.169.254/',
      'http://10.0.0.5/',
      'http://[fe80::1]/',
      'http://[::ffff:192.168.0.1]/',
    ]) {
      await expectError(createWebhook(t.db, t.secrets, project, body({ url }), publicDns), 400, 'private_url', /private networks/);
    }
    const rebinding: WebhookPolicy = { allowPrivate: false, resolve: async () => ['93.184.215.14', '192.168.1.10'] };
    await expectError(createWebhook(t.db, t.secrets, project, body(), rebinding), 400, 'private_url');
    const allowed = await createWebhook(t.db, t.secrets, project, body({ url: 'http://127.0.0.1:8080/' }), { allowPrivate: true });
    expect(allowed.url).toBe('http://127.0.0.1:8080/');
  });

  it('knows the event type names', async () => {
    const project = await createProject(t.db);
    await expectError(
      createWebhook(t.db, t.secrets, project, body({ subscribed_events: ['session.exploded'] }), publicDns),
      400,
      'unknown_event_type',
      /session\.exploded/,
    );
    await expectError(createWebhook(t.db, t.secrets, project, body({ subscribed_events: [] }), publicDns), 400, 'invalid_body');
    await expectError(createWebhook(t.db, t.secrets, project, body({ subscribed_events: 'task.failed' }), publicDns), 400, 'invalid_body');
    await expectError(createWebhook(t.db, t.secrets, project, body({ extra: 1 }), publicDns), 400, 'invalid_body');
    const all = await createWebhook(t.db, t.secrets, project, body({ subscribed_events: [...EVENT_TYPES] }), publicDns);
    expect(all.subscribed_events).toEqual([...EVENT_TYPES]);
  });

  it('enforces the per-project maximum, per project', async () => {
    const project = await createProject(t.db);
    const other = await createProject(t.db);
    const policy = { ...publicDns, maxPerProject: 3 };
    await Promise.all([1, 2, 3].map(() => createWebhook(t.db, t.secrets, project, body(), policy)));
    await expectError(createWebhook(t.db, t.secrets, project, body(), policy), 409, 'limit_reached', /at most 3/);
    await createWebhook(t.db, t.secrets, other, body(), policy);
    const [first] = (await listWebhooks(t.db, project)).data;
    await deleteWebhook(t.db, project, first.id);
    await createWebhook(t.db, t.secrets, project, body(), policy);
  });
});

describe('list, get, patch, delete', () => {
  it('scopes everything to the project', async () => {
    const project = await createProject(t.db);
    const other = await createProject(t.db);
    const a = await createWebhook(t.db, t.secrets, project, body(), publicDns);
    const b = await createWebhook(t.db, t.secrets, project, body({ url: 'https://b.example.com/' }), publicDns);
    await createWebhook(t.db, t.secrets, other, body(), publicDns);
    const page = await listWebhooks(t.db, project);
    expect(page.data.map((w) => w.id)).toEqual([b.id, a.id]); // newest first
    expect(page.pagination).toEqual({ page: 1, limit: 20, total: 2, total_pages: 1 });
    const second = await listWebhooks(t.db, project, { page: 2, limit: 1 });
    expect(second.data.map((w) => w.id)).toEqual([a.id]);
    expect(second.pagination).toEqual({ page: 2, limit: 1, total: 2, total_pages: 2 });
    expect(await getWebhook(t.db, other, a.id)).toBeNull();
    expect(await updateWebhook(t.db, t.signals, other, a.id, { enabled: false }, publicDns)).toBeNull();
    expect(await rotateWebhookSecret(t.db, t.secrets, other, a.id)).toBeNull();
    expect(await sendTestEvent(t.db, t.signals, other, a.id, 'task.failed')).toBeNull();
    expect(await listDeliveries(t.db, other, a.id, { page: 1, limit: 20 })).toBeNull();
    expect(await deleteWebhook(t.db, other, a.id)).toBe(false);
    expect(await getWebhook(t.db, project, a.id)).not.toBeNull();
  });

  it('patch: {} changes nothing; fields change; bad values refused', async () => {
    const project = await createProject(t.db);
    const wh = await createWebhook(t.db, t.secrets, project, body(), publicDns);
    const { secret, ...resource } = wh;
    expect(secret).toBeTruthy();
    // Time is the subject: a later updated_at than the creation's (checked below) needs the clock to move.
    await new Promise((r) => setTimeout(r, 5));
    expect(await updateWebhook(t.db, t.signals, project, wh.id, {}, publicDns)).toEqual(resource);
    const patched = await updateWebhook(
      t.db,
      t.signals,
      project,
      wh.id,
      { url: 'https://new.example.com/x', description: 'd', subscribed_events: ['identity.authenticated'], enabled: false },
      publicDns,
    );
    expect(patched).toMatchObject({ url: 'https://new.example.com/x', description: 'd', subscribed_events: ['identity.authenticated'], enabled: false });
    expect(patched!.updated_at > wh.updated_at).toBe(true);
    expect(patched!.created_at).toBe(wh.created_at);
    await expectError(updateWebhook(t.db, t.signals, project, wh.id, { url: 'http://127.0.0.1/' }, publicDns), 400, 'private_url');
    await expectError(updateWebhook(t.db, t.signals, project, wh.id, { subscribed_events: ['x.y'] }, publicDns), 400, 'unknown_event_type');
    await expectError(updateWebhook(t.db, t.signals, project, wh.id, { enabled: 'yes' }, publicDns), 400, 'invalid_body');
    await expectError(updateWebhook(t.db, t.signals, project, wh.id, { secret: 'whsec_x' }, publicDns), 400, 'invalid_body');
    expect(await updateWebhook(t.db, t.signals, project, 'wh_missing', {}, publicDns)).toBeNull();
  });

  it('delete removes the webhook and its deliveries; get then finds nothing', async () => {
    const project = await createProject(t.db);
    const wh = await createWebhook(t.db, t.secrets, project, body(), publicDns);
    await emitEvent(t.db, t.signals, project, 'session.completed', sampleEventData('session.completed'));
    expect(await t.db.query('SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1', [wh.id])).toHaveLength(1);
    expect(await deleteWebhook(t.db, project, wh.id)).toBe(true);
    expect(await getWebhook(t.db, project, wh.id)).toBeNull();
    expect(await deleteWebhook(t.db, project, wh.id)).toBe(false);
    expect(await t.db.query('SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1', [wh.id])).toHaveLength(0);
  });
});

describe('rotate-secret', () => {
  it('replaces the secret and keeps the old one for 24 hours', async () => {
    const project = await createProject(t.db);
    const wh = await createWebhook(t.db, t.secrets, project, body(), publicDns);
    const rotated = await rotateWebhookSecret(t.db, t.secrets, project, wh.id);
    expect(rotated!.secret).toMatch(/^whsec_/);
    expect(rotated!.secret).not.toBe(wh.secret);
    const [row] = await t.db.query<{ secret: string; previous_secret: string; left: number }>(
      `SELECT secret, previous_secret, extract(epoch FROM previous_secret_expires_at - now()) AS left FROM webhooks WHERE id = $1`,
      [wh.id],
    );
    // Stored sealed (sealed-secrets.ts): the new one in `secret`, the old one in `previous_secret`.
    expect(openSecret(t.secrets, wh.id, row.secret)).toBe(rotated!.secret);
    expect(openSecret(t.secrets, wh.id, row.previous_secret)).toBe(wh.secret);
    expect(Number(row.left)).toBeGreaterThan(24 * 3600 - 60);
    expect(Number(row.left)).toBeLessThanOrEqual(24 * 3600);
  });
});

describe('test event', () => {
  it('queues a signed-to-be delivery of a synthetic event to this webhook only', async () => {
    const project = await createProject(t.db);
    const wh = await createWebhook(t.db, t.secrets, project, body({ subscribed_events: ['batch.completed'] }), publicDns);
    const other = await createWebhook(t.db, t.secrets, project, body({ subscribed_events: [...EVENT_TYPES] }), publicDns);
    const r = await sendTestEvent(t.db, t.signals, project, wh.id, 'intervention.requested');
    expect(r).toEqual({
      event_id: expect.stringMatching(/^evt_[A-Za-z0-9]+$/),
      event_type: 'intervention.requested',
      delivery_ids: [expect.stringMatching(/^dlv_[A-Za-z0-9]+$/)],
    });
    expect(await getEvent(t.db, project, r!.event_id)).toMatchObject({ type: 'intervention.requested', project_id: project });
    const page = await listDeliveries(t.db, project, wh.id, validateDeliveryQuery({}));
    expect(page!.data).toEqual([
      {
        id: r!.delivery_ids[0],
        event_id: r!.event_id,
        event_type: 'intervention.requested',
        attempt: 1,
        status: 'pending',
        response_status: null,
        error_message: null,
        scheduled_at: expect.any(String),
        completed_at: null,
      },
    ]);
    expect(await t.db.query('SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1', [other.id])).toHaveLength(0);
    const [ev] = await t.db.query<{ test: boolean }>('SELECT test FROM events WHERE id = $1', [r!.event_id]);
    expect(ev.test).toBe(true);
    await expectError(sendTestEvent(t.db, t.signals, project, wh.id, 'nope'), 400, 'unknown_event_type');
    await expectError(sendTestEvent(t.db, t.signals, project, wh.id, undefined), 400, 'unknown_event_type');
  });
});

describe('deliveries list', () => {
  it('filters by status and event_type and pages newest first', async () => {
    const project = await createProject(t.db);
    const wh = await createWebhook(t.db, t.secrets, project, body({ subscribed_events: ['batch.completed', 'batch.failed'] }), publicDns);
    for (let i = 0; i < 5; i++) await emitEvent(t.db, t.signals, project, 'batch.completed', sampleEventData('batch.completed'));
    for (let i = 0; i < 3; i++) await emitEvent(t.db, t.signals, project, 'batch.failed', sampleEventData('batch.failed'));
    await t.db.query(
      `UPDATE webhook_deliveries SET status = 'succeeded', response_status = 200, completed_at = now() WHERE webhook_id = $1 AND event_type = 'batch.failed'`,
      [wh.id],
    );

    const all = await listDeliveries(t.db, project, wh.id, validateDeliveryQuery({}));
    expect(all!.pagination).toEqual({ page: 1, limit: 20, total: 8, total_pages: 1 });
    expect(all!.data[0].event_type).toBe('batch.failed');
    expect(Object.keys(all!.data[0]).sort()).toEqual(
      ['attempt', 'completed_at', 'error_message', 'event_id', 'event_type', 'id', 'response_status', 'scheduled_at', 'status'].sort(),
    );
    const page2 = await listDeliveries(t.db, project, wh.id, validateDeliveryQuery({ page: '2', limit: '3' }));
    expect(page2!.pagination).toEqual({ page: 2, limit: 3, total: 8, total_pages: 3 });
    expect(page2!.data.map((d) => d.id)).toEqual(all!.data.slice(3, 6).map((d) => d.id));
    const ok = await listDeliveries(t.db, project, wh.id, validateDeliveryQuery({ status: 'succeeded' }));
    expect(ok!.data).toHaveLength(3);
    expect(ok!.data.every((d) => d.status === 'succeeded' && d.response_status === 200 && d.completed_at)).toBe(true);
    const byType = await listDeliveries(t.db, project, wh.id, validateDeliveryQuery({ event_type: 'batch.completed', status: 'pending' }));
    expect(byType!.pagination.total).toBe(5);
    expect(() => validateDeliveryQuery({ status: 'lost' })).toThrow(WebhookError);
    expect(() => validateDeliveryQuery({ event_type: 'x' })).toThrow(WebhookError);
    expect(() => validateDeliveryQuery({ limit: '101' })).toThrow(WebhookError);
    expect(() => validateDeliveryQuery({ page: '0' })).toThrow(WebhookError);
    expect(await listDeliveries(t.db, project, 'wh_missing', validateDeliveryQuery({}))).toBeNull();
  });
});
