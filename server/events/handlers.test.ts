// The eight webhook operations over real HTTP through the project's HTTP layer (auth,
// contract validation, serialization), with every answer checked against its documented
// response schema, and real receivers verifying signatures (W1, W2, W3, W5, G9, G11).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { getRequestListener } from '@hono/node-server';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findKey, hashKey } from '../auth/api-keys.js';
import { createHttpApp, finishApp, type AppHandlers } from '../http/app.js';
import { compileSchema, createAjv, deref, loadSpec, type JsonObject } from '../http/spec.js';
import { createLogger } from '../log.js';
import { DeliveryWorker } from './deliver.js';
import { webhookHandlers } from './handlers.js';
import { openTestDb, startReceiver, waitFor, type Receiver, type TestDb } from './test-support.js';

let t: TestDb;
let worker: DeliveryWorker;
const servers: Server[] = [];
const receivers: Receiver[] = [];
const spec = loadSpec();
const ajv = createAjv(spec);

async function serve(allowPrivate: boolean, maxPerProject = 20): Promise<string> {
  // Only the webhook operations are exercised here; the others keep their placeholders.
  const handlers = {
    ...webhookHandlers({ db: t.db, signals: t.signals, secrets: t.secrets, allowPrivate, maxPerProject, resolve: async () => ['93.184.215.14'] }),
  } as AppHandlers;
  const app = createHttpApp({
    handlers,
    log: createLogger('silent'),
    authenticate: (key) => findKey(t.db, key),
    maxBodyBytes: 1024 * 1024,
    maxUploadBytes: 1024 * 1024,
    publicUrl: 'http://localhost',
  });
  finishApp(app);
  const server = createServer(getRequestListener(app.fetch));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A project (uuid, as the contract's project_id is) with one API key. */
async function project(): Promise<{ id: string; key: string }> {
  const id = randomUUID();
  const key = `sk_test_${randomBytes(16).toString('hex')}`;
  await t.db.query('INSERT INTO projects (id, name) VALUES ($1, $2)', [id, 'webhooks test']);
  await t.db.query('INSERT INTO api_keys (id, project_id, key_hash, prefix, source) VALUES ($1, $2, $3, $4, $5)', [
    `key_${randomBytes(6).toString('hex')}`,
    id,
    hashKey(key),
    key.slice(0, 7),
    'test',
  ]);
  return { id, key };
}

const validators = new Map<string, ReturnType<typeof compileSchema>>();
/** Checks the answer against the documented schema of (path template, method, status). */
function expectDocumented(path: string, method: string, status: number, body: unknown) {
  const key = `${method} ${path} ${status}`;
  let v = validators.get(key);
  if (!v) {
    const op = spec.paths[path][method];
    const response = deref(spec, op.responses[String(status)] as JsonObject);
    expect(response, `${key} is documented`).toBeTruthy();
    v = compileSchema(ajv, response.content['application/json'].schema);
    validators.set(key, v);
  }
  expect(v(body), `${key}: ${JSON.stringify(v.errors)}`).toBe(true);
}

function client(base: string, key: string) {
  return async (method: string, path: string, template: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'service-api-key': key, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    expectDocumented(template, method.toLowerCase(), res.status, json);
    return { status: res.status, body: json as any };
  };
}

beforeAll(async () => {
  t = await openTestDb();
  worker = new DeliveryWorker({ db: t.db, secrets: t.secrets, signals: t.signals, allowPrivate: true, pollIntervalMs: 50, retrySchedule: [300, 300] });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop(1000);
  for (const s of servers) (s.closeAllConnections(), s.close());
  for (const r of receivers) await r.close();
  await t?.close();
});

describe('webhook operations over HTTP', () => {
  it('W1/W2/W3/G9: create, list, get, patch, rotate, test, deliveries, delete', async () => {
    const base = await serve(true);
    const p = await project();
    const call = client(base, p.key);
    const rcv = await startReceiver();
    receivers.push(rcv);

    const created = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: rcv.url, subscribed_events: ['task.completed'] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ project_id: p.id, url: rcv.url, subscribed_events: ['task.completed'], enabled: true, description: '' });
    const id: string = created.body.id;
    const path = `/v1/webhooks/${id}`;

    const list = await call('GET', '/v1/webhooks', '/v1/webhooks');
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([id]);
    expect(list.body.data[0]).not.toHaveProperty('secret');

    const got = await call('GET', path, '/v1/webhooks/{id}');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(list.body.data[0]);

    const same = await call('PATCH', path, '/v1/webhooks/{id}', {});
    expect(same).toEqual({ status: 200, body: got.body });
    const patched = await call('PATCH', path, '/v1/webhooks/{id}', { description: 'ops', subscribed_events: ['task.completed', 'task.failed'] });
    expect(patched.body).toMatchObject({ description: 'ops', subscribed_events: ['task.completed', 'task.failed'] });

    // W2: a test event reaches the receiver, valid under the current secret.
    const test = await call('POST', `${path}/test`, '/v1/webhooks/{id}/test', { event_type: 'batch.failed' });
    expect(test.status).toBe(200);
    await waitFor(() => rcv.received.length === 1, 5000, 'the test event');
    const first = rcv.received[0];
    const envelope = new Webhook(created.body.secret).verify(first.body, first.headers as Record<string, string>) as Record<string, unknown>;
    expect(envelope).toMatchObject({ id: test.body.event_id, type: 'batch.failed', project_id: p.id });
    expect(Object.keys(envelope).sort()).toEqual(['created', 'data', 'id', 'project_id', 'text', 'type']);

    // W3: after rotate-secret, deliveries are signed with the new secret.
    const rotated = await call('POST', `${path}/rotate-secret`, '/v1/webhooks/{id}/rotate-secret');
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    await call('POST', `${path}/test`, '/v1/webhooks/{id}/test', { event_type: 'session.completed' });
    await waitFor(() => rcv.received.length === 2, 5000, 'the second test event');
    const second = rcv.received[1];
    new Webhook(rotated.body.secret).verify(second.body, second.headers as Record<string, string>);

    const deliveries = await call('GET', `${path}/events`, '/v1/webhooks/{id}/events');
    expect(deliveries.body.pagination.total).toBeGreaterThanOrEqual(2);
    const filtered = await call('GET', `${path}/events?event_type=batch.failed&status=succeeded`, '/v1/webhooks/{id}/events');
    await waitFor(async () => (await call('GET', `${path}/events?status=succeeded`, '/v1/webhooks/{id}/events')).body.pagination.total === 2);
    expect(filtered.body.data.every((d: { event_type: string }) => d.event_type === 'batch.failed')).toBe(true);

    // G9: delete, then get answers 404.
    const deleted = await call('DELETE', path, '/v1/webhooks/{id}');
    expect(deleted).toEqual({ status: 200, body: { id, deleted: true } });
    for (const [m, suffix, template, body] of [
      ['GET', '', '/v1/webhooks/{id}', undefined],
      ['PATCH', '', '/v1/webhooks/{id}', {}],
      ['DELETE', '', '/v1/webhooks/{id}', undefined],
      ['POST', '/rotate-secret', '/v1/webhooks/{id}/rotate-secret', undefined],
      ['POST', '/test', '/v1/webhooks/{id}/test', { event_type: 'task.failed' }],
      ['GET', '/events', '/v1/webhooks/{id}/events', undefined],
    ] as const) {
      const r = await call(m, `${path}${suffix}`, template, body);
      expect(r.status, `${m} ${suffix}`).toBe(404);
    }
  });

  it('W5: a receiver answering 500 gets the event again; the deliveries list the attempts', async () => {
    const base = await serve(true);
    const p = await project();
    const call = client(base, p.key);
    const rcv = await startReceiver((_req, _body, res, n) => {
      res.writeHead(n === 1 ? 500 : 200);
      res.end();
    });
    receivers.push(rcv);
    const created = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: rcv.url, subscribed_events: ['identity.authenticated'] });
    const path = `/v1/webhooks/${created.body.id}`;
    const test = await call('POST', `${path}/test`, '/v1/webhooks/{id}/test', { event_type: 'identity.authenticated' });
    await waitFor(() => rcv.received.length === 2, 5000, 'the retry');
    expect(rcv.received.map((r) => r.headers['webhook-id'])).toEqual([test.body.event_id, test.body.event_id]);
    const attempts = await waitFor(async () => {
      const r = await call('GET', `${path}/events`, '/v1/webhooks/{id}/events');
      return r.body.data.length === 2 && r.body.data[0].status === 'succeeded' ? r.body.data : null;
    });
    expect(attempts.map((d: { attempt: number; status: string; response_status: number }) => [d.attempt, d.status, d.response_status])).toEqual([
      [2, 'succeeded', 200],
      [1, 'failed', 500],
    ]);
    const failed = await call('GET', `${path}/events?status=failed`, '/v1/webhooks/{id}/events');
    expect(failed.body.data).toHaveLength(1);
    expect(failed.body.data[0].error_message).toBe('Receiver answered 500');
  });

  it("G11: another project sees 404 for this project's webhook", async () => {
    const base = await serve(true);
    const a = await project();
    const b = await project();
    const created = await client(base, a.key)('POST', '/v1/webhooks', '/v1/webhooks', { url: 'http://127.0.0.1:9/x', subscribed_events: ['task.failed'] });
    const other = client(base, b.key);
    expect((await other('GET', `/v1/webhooks/${created.body.id}`, '/v1/webhooks/{id}')).status).toBe(404);
    expect((await other('DELETE', `/v1/webhooks/${created.body.id}`, '/v1/webhooks/{id}')).status).toBe(404);
    expect((await other('GET', '/v1/webhooks', '/v1/webhooks')).body.data).toEqual([]);
  });

  it('answers the documented 400s and 409', async () => {
    const base = await serve(false, 2);
    const p = await project();
    const call = client(base, p.key);
    const privateUrl = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: 'http://127.0.0.1:8080/hook', subscribed_events: ['task.failed'] });
    expect(privateUrl.status).toBe(400);
    expect(privateUrl.body.error.message).toMatch(/private networks/);
    const metadata = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: 'http://169.254.169.254/latest', subscribed_events: ['task.failed'] });
    expect(metadata.status).toBe(400);
    const unknown = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: 'https://hooks.example.com/', subscribed_events: ['task.exploded'] });
    expect(unknown.status).toBe(400);
    const ftp = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: 'ftp://hooks.example.com/', subscribed_events: ['task.failed'] });
    expect(ftp.status).toBe(400);
    for (let i = 0; i < 2; i++) {
      expect((await call('POST', '/v1/webhooks', '/v1/webhooks', { url: 'https://hooks.example.com/', subscribed_events: ['task.failed'] })).status).toBe(200);
    }
    const third = await call('POST', '/v1/webhooks', '/v1/webhooks', { url: 'https://hooks.example.com/', subscribed_events: ['task.failed'] });
    expect(third.status).toBe(409);
    expect(third.body).toEqual({ error: { code: 409, message: 'A project can have at most 2 webhooks; delete one first' } });
    const [wh] = (await call('GET', '/v1/webhooks', '/v1/webhooks')).body.data;
    const badPatch = await call('PATCH', `/v1/webhooks/${wh.id}`, '/v1/webhooks/{id}', { url: 'http://[::1]/' });
    expect(badPatch.status).toBe(400);
    const badTest = await call('POST', `/v1/webhooks/${wh.id}/test`, '/v1/webhooks/{id}/test', { event_type: 'nope' });
    expect(badTest.status).toBe(400);
    const badQuery = await call('GET', `/v1/webhooks/${wh.id}/events?status=lost`, '/v1/webhooks/{id}/events');
    expect(badQuery.status).toBe(400);
  });
});
