// Webhooks and events (docs/conformance-rules.md): W1–W5, and G9 for webhooks.
//
// Events are observed the way a user observes them: a webhook pointing at a receiver that
// the suite starts on its fixture server (127.0.0.1 by default, --fixtures-url when the
// server under test runs elsewhere), verified with the Standard Webhooks library, as the
// contract's Webhooks tag tells receivers to.
//
// Every webhook is made through ctx.call, so the run's cleanup deletes what a failing check
// left; the checks delete their own webhooks as they go (a project may have only 20).
//
// A server that refuses private and loopback webhook URLs (ours without
// ALLOW_PRIVATE_NETWORKS=true) cannot reach a receiver on loopback: W2–W5 then fail saying
// so; W1 and G9 fall back to the contract's example URL.
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Exchange, SuiteContext } from '../context.js';
import type { JsonObject, Operation } from '../contract.js';
import { answered, exchangeLine } from '../generic/common.js';
import type { HttpResponse } from '../http.js';
import { Receiver, type ReceivedRequest } from '../receiver.js';
import { documentedAnswerProblems } from '../responses.js';
import { check, defineRules, firstDifference, type Check, type T } from '../runner.js';

/** How long a test event may take to reach the receiver. */
const DELIVERY_WAIT_MS = 30_000;
/** W5: how long the retry of a failed delivery (and its record) may take. */
const RETRY_WAIT_MS = 90_000;
/** Largest page the listings allow (Limit: maximum 100); more pages than this are not read. */
const PAGE_LIMIT = 100;
const MAX_PAGES = 20;
/** The Standard Webhooks libraries refuse timestamps further than this from their clock. */
const TIMESTAMP_TOLERANCE_S = 5 * 60;
/** Used when the server refuses the receiver's address and the contract has no example URL. */
const FALLBACK_URL = 'https://hooks.example.com/browser-events';

const suffix = () => randomBytes(3).toString('hex');

type Json = Record<string, any>;

interface Made {
  /** The create answer's body: the webhook with its secret. */
  webhook: Json;
  id: string;
  secret: string;
  url: string;
  ex: Exchange;
}

/** A problem that stops every check sharing a setup; the checks fail with its message. */
class SetupProblem extends Error {}

/** Runs `setup` once; every check that awaits it gets its value or fails with its problem. */
function once<R>(setup: () => Promise<R>): (t: T) => Promise<R> {
  let p: Promise<{ value: R } | { problem: string }> | undefined;
  return async (t: T) => {
    p ??= setup().then(
      (value) => ({ value }),
      (err: Error) => ({ problem: err instanceof SetupProblem ? err.message : `the setup threw: ${err?.stack ?? String(err)}` }),
    );
    const r = await p;
    if ('problem' in r) t.fail(r.problem);
    return r.value;
  };
}

/** The general error body's message, when the answer has one. */
function errorMessage(res: HttpResponse): string | undefined {
  const e = (res.json as { error?: unknown } | undefined)?.error;
  if (typeof e === 'string') return e;
  if (e && typeof e === 'object' && typeof (e as { message?: unknown }).message === 'string') return (e as { message: string }).message;
  return undefined;
}

/** A 400 whose message says the URL's address is private (loopback, link-local…). */
function refusedAsPrivate(res: HttpResponse | undefined): boolean {
  if (!res || res.status !== 400) return false;
  return /private|loopback|link-local|internal (network|address)|local network/i.test(errorMessage(res) ?? res.text);
}

/** The same URL, however the server spells it (a trailing slash on a bare host, case of the host). */
function sameUrl(a: unknown, b: unknown): boolean {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return a === b;
  }
}

const sorted = (v: unknown) => (Array.isArray(v) ? [...v].map(String).sort() : v);
const withoutSecret = (w: Json) => Object.fromEntries(Object.entries(w).filter(([k]) => k !== 'secret'));

/** The header names and values Webhook.verify() takes. */
function signedHeaders(r: ReceivedRequest): Record<string, string> {
  return {
    'webhook-id': r.headers['webhook-id'] ?? '',
    'webhook-timestamp': r.headers['webhook-timestamp'] ?? '',
    'webhook-signature': r.headers['webhook-signature'] ?? '',
  };
}

/** undefined when the delivery verifies under `secret`, else the library's reason. */
function verifyProblem(secret: string, r: ReceivedRequest): string | undefined {
  try {
    new Webhook(secret).verify(r.text, signedHeaders(r));
    return undefined;
  } catch (err) {
    return (err as Error).message || String(err);
  }
}

const eventIdOf = (r: ReceivedRequest) => r.headers['webhook-id'];

export default defineRules((ctx: SuiteContext) => {
  const op = {
    create: ctx.contract.operation('createWebhook'),
    list: ctx.contract.operation('listWebhooks'),
    get: ctx.contract.operation('getWebhook'),
    update: ctx.contract.operation('updateWebhook'),
    remove: ctx.contract.operation('deleteWebhook'),
    rotate: ctx.contract.operation('rotateWebhookSecret'),
    test: ctx.contract.operation('testWebhook'),
    deliveries: ctx.contract.operation('listWebhookDeliveries'),
  };
  const schemas: Json = ctx.contract.spec.components?.schemas ?? {};

  // -------------------------------------------------------------------------------------
  // Requests

  /** Sends `o` for webhook `id` (when it has a path id), with `body` and exactly `query`. */
  const send = async (o: Operation, options: { id?: string; body?: unknown; query?: [string, string][] } = {}): Promise<Exchange> => {
    const built = await ctx.build(o, options.id === undefined ? {} : { pathParams: { id: options.id } });
    // The contract's example and default query values (a status filter…) are not wanted here.
    built.query = options.query ?? [];
    return ctx.call(built, 'body' in options ? { bodyValue: options.body } : {});
  };

  /** Fails unless the answer is `status` and is what the contract documents for it (status, Content-Type, body schema). */
  const expectAnswer = (t: T, ex: Exchange, what: string, status = 200): HttpResponse => {
    const res = answered(t, ex);
    t.assert(res.status === status, `${what}: ${exchangeLine(ex, 400)}, expected ${status}`);
    const problems = documentedAnswerProblems(ctx.contract, ex.built.op, res);
    t.assert(problems.length === 0, `${what}: ${problems.join('; ')}\n${exchangeLine(ex, 400)}`);
    return res;
  };

  /** Deletes a webhook if it is still there; for the end of a check, so it never fails one. */
  const discard = async (id: string | undefined, receiver?: Receiver) => {
    receiver?.close();
    if (id === undefined || !ctx.registry.live(op.create.path).some((r) => r.id === id)) return;
    await send(op.remove, { id }).catch(() => undefined);
  };

  /** What a refused creation means, for the failure message. */
  const creationProblem = (ex: Exchange, url: string, forReceiver: boolean): string => {
    const res = ex.response;
    if (!res) return `POST /v1/webhooks: no answer: ${ex.error}`;
    if (forReceiver && refusedAsPrivate(res)) {
      return (
        `the server refused the webhook URL of the suite's receiver, ${url}, as a private address ` +
        `(${JSON.stringify(errorMessage(res) ?? res.text.slice(0, 200))}): the server under test must allow the receiver's network ` +
        `(ours: ALLOW_PRIVATE_NETWORKS=true), or run the suite with --fixtures-url at an address the server may reach`
      );
    }
    if (res.status === 409) return `the project has as many webhooks as it may have; delete some and run again: ${exchangeLine(ex, 300)}`;
    return `POST /v1/webhooks ${JSON.stringify({ url })} was refused: ${exchangeLine(ex, 400)}`;
  };

  /** Creates a webhook; throws a SetupProblem when the server refuses it. */
  const createWebhook = async (body: Json, forReceiver: boolean): Promise<Made> => {
    const ex = await send(op.create, { body });
    if (ex.response?.status !== 200) throw new SetupProblem(creationProblem(ex, body.url, forReceiver));
    const w = ex.response.json as Json;
    if (!w || typeof w.id !== 'string' || typeof w.secret !== 'string') {
      throw new SetupProblem(`POST /v1/webhooks answered 200 without a string id and secret: ${exchangeLine(ex, 400)}`);
    }
    return { webhook: w, id: w.id, secret: w.secret, url: body.url, ex };
  };

  /** A webhook pointing at `receiver`; fails W2–W5 clearly when the server refuses the receiver's address. */
  const receiverWebhook = async (receiver: Receiver, label: string, subscribed: string[] = ['session.failed']): Promise<Made> => {
    const url = await receiver.url();
    return createWebhook({ url, subscribed_events: subscribed, description: `conformance ${label} ${suffix()}`, enabled: true }, true);
  };

  /**
   * A webhook for the checks that need none of its deliveries (W1, G9): at the receiver when
   * the server allows it, else at the contract's example URL.
   */
  const plainWebhook = async (label: string, body: Json = {}): Promise<{ made: Made; receiver: Receiver; note?: string }> => {
    const receiver = new Receiver(ctx.fixtures, { name: label });
    const base = { subscribed_events: ['task.completed', 'session.failed'], description: `conformance ${label} ${suffix()}`, enabled: true, ...body };
    const url = await receiver.url();
    const ex = await send(op.create, { body: { ...base, url } });
    if (refusedAsPrivate(ex.response)) {
      receiver.close();
      const example = (op.create.requestBody?.content['application/json']?.example as Json | undefined)?.url;
      const other = typeof example === 'string' ? example : FALLBACK_URL;
      const refusal = JSON.stringify(errorMessage(ex.response!) ?? ex.response!.text.slice(0, 200));
      try {
        const made = await createWebhook({ ...base, url: other }, false);
        return { made, receiver, note: `the server refuses the receiver's address (${refusal}); used ${other}` };
      } catch (err) {
        if (!(err instanceof SetupProblem)) throw err;
        throw new SetupProblem(
          `the server refuses the receiver's address ${url} as private (${refusal}), and the contract's example URL instead: ${err.message}. ` +
            `Allow the receiver's network on the server under test (ours: ALLOW_PRIVATE_NETWORKS=true), or give the suite --fixtures-url at an address the server may reach`,
        );
      }
    }
    if (ex.response?.status !== 200) throw new SetupProblem(creationProblem(ex, url, false));
    const w = ex.response.json as Json;
    if (!w || typeof w.id !== 'string' || typeof w.secret !== 'string') {
      throw new SetupProblem(`POST /v1/webhooks answered 200 without a string id and secret: ${exchangeLine(ex, 400)}`);
    }
    return { made: { webhook: w, id: w.id, secret: w.secret, url, ex }, receiver };
  };

  /** POST test; fails unless it answers 200 with an event id. */
  const sendTest = async (t: T, id: string, eventType: string): Promise<{ ex: Exchange; body: Json }> => {
    const ex = await send(op.test, { id, body: { event_type: eventType } });
    const res = answered(t, ex);
    t.assert(res.status === 200, `POST /v1/webhooks/${id}/test ${JSON.stringify({ event_type: eventType })}: ${exchangeLine(ex, 400)}`);
    const body = res.json as Json;
    t.assert(body && typeof body.event_id === 'string', `the test answer names no event_id: ${exchangeLine(ex, 400)}`);
    return { ex, body };
  };

  /** Every item of a paginated listing (`data`), page by page. */
  const listAll = async (t: T, o: Operation, id: string | undefined, what: string): Promise<{ items: Json[]; first: Exchange }> => {
    const items: Json[] = [];
    let first: Exchange | undefined;
    for (let page = 1; page <= MAX_PAGES; page++) {
      const ex = await send(o, {
        id,
        query: [
          ['page', String(page)],
          ['limit', String(PAGE_LIMIT)],
        ],
      });
      expectAnswer(t, ex, `${what}, page ${page}`);
      first ??= ex;
      const body = ex.response!.json as { data: Json[]; pagination?: { total_pages?: number } };
      items.push(...body.data);
      const pages = body.pagination?.total_pages;
      if (body.data.length < PAGE_LIMIT || (typeof pages === 'number' && page >= pages)) break;
    }
    return { items, first: first! };
  };

  /** The delivery attempts listed for one event. */
  const attemptsOf = async (t: T, id: string, eventId: string): Promise<{ attempts: Json[]; ex: Exchange }> => {
    const { items, first } = await listAll(t, op.deliveries, id, `GET /v1/webhooks/${id}/events`);
    return { attempts: items.filter((d) => d.event_id === eventId).sort((a, b) => a.attempt - b.attempt), ex: first };
  };

  const waitDelivery = async (receiver: Receiver, eventId: string, timeoutMs = DELIVERY_WAIT_MS): Promise<ReceivedRequest | undefined> =>
    (await receiver.waitFor((r) => eventIdOf(r) === eventId, timeoutMs))[0];

  const noDelivery = (receiver: Receiver, eventId: string, ms: number) => {
    const others = receiver.received.map((r) => eventIdOf(r) ?? '(no webhook-id)');
    return (
      `the test event ${eventId} did not reach the receiver within ${ms / 1000} s` +
      (others.length ? ` (it received: ${others.join(', ')})` : ' (it received nothing)')
    );
  };

  /** The checks of what a webhook record must hold after create, as sent. */
  const expectAsSent = (t: T, w: Json, sent: Json, what: string) => {
    t.assert(sameUrl(w.url, sent.url), `${what}: url ${JSON.stringify(w.url)}, sent ${JSON.stringify(sent.url)}`);
    t.equal(sorted(w.subscribed_events), sorted(sent.subscribed_events), `${what}: subscribed_events`);
    t.equal(w.description, sent.description, `${what}: description`);
    t.equal(w.enabled, sent.enabled, `${what}: enabled`);
  };

  // -------------------------------------------------------------------------------------
  // W1: one webhook through every operation

  const w1Sent: Json = {};
  let w1Problem: string | undefined;
  const w1 = once(async () => {
    const r = await plainWebhook('w1');
    Object.assign(w1Sent, { url: r.made.url, subscribed_events: ['task.completed', 'session.failed'], description: r.made.webhook.description, enabled: true });
    return r;
  });
  /** W1's webhook as GET answers it. */
  const getW1 = async (t: T, id: string, what: string): Promise<Json> => {
    const ex = await send(op.get, { id });
    return expectAnswer(t, ex, what).json as Json;
  };
  /** One test event of W1's webhook, shared by the test and deliveries checks. */
  let w1Test: Promise<{ ex: Exchange; body: Json }> | undefined;
  const testW1 = (t: T, id: string) => (w1Test ??= sendTest(t, id, 'task.completed'));

  const w1Checks: Check[] = [
    check('W1 POST /v1/webhooks answers 200 with the webhook and its whsec_ signing secret (WebhookWithSecret)', async (t: T) => {
      const { made, note } = await w1(t);
      const res = expectAnswer(t, made.ex, 'POST /v1/webhooks');
      const w = res.json as Json;
      expectAsSent(t, w, w1Sent, 'the created webhook');
      t.assert(/^wh_[A-Za-z0-9]+$/.test(w.id), `id ${JSON.stringify(w.id)} is not wh_…`);
      t.assert(/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(w.secret), `secret ${JSON.stringify(w.secret)} is not whsec_<base64>`);
      try {
        new Webhook(w.secret);
      } catch (err) {
        t.fail(`the Standard Webhooks library refuses the secret: ${(err as Error).message}`);
      }
      if (note) t.note(note);
      t.note(`${w.id} ${w.url}`);
    }),

    check('W1 GET /v1/webhooks lists the created webhook, without its secret (WebhookListResponse)', async (t: T) => {
      const { made } = await w1(t);
      const { items } = await listAll(t, op.list, undefined, 'GET /v1/webhooks');
      const mine = items.filter((w) => w.id === made.id);
      t.assert(mine.length === 1, `the listing has ${mine.length} items with id ${made.id} (of ${items.length} webhooks)`);
      t.assert(!('secret' in mine[0]), 'the listing shows the secret');
      t.equal(mine[0], withoutSecret(made.webhook), 'the listed webhook against the create answer');
      const created = items.map((w) => Date.parse(w.created_at));
      const order = created.findIndex((c, i) => i > 0 && c > created[i - 1]);
      t.assert(order < 0, `not newest first: item ${order} (${items[order]?.created_at}) is newer than item ${order - 1} (${items[order - 1]?.created_at})`);
      t.note(`${items.length} webhooks listed`);
    }),

    check('W1 GET /v1/webhooks/{id} answers the webhook without its secret (Webhook)', async (t: T) => {
      const { made } = await w1(t);
      const w = await getW1(t, made.id, `GET /v1/webhooks/${made.id}`);
      t.assert(!('secret' in w), 'GET shows the secret');
      t.equal(w, withoutSecret(made.webhook), 'GET against the create answer');
      t.note(made.id);
    }),

    check('W1 PATCH /v1/webhooks/{id} with {} is accepted and changes nothing (Webhook)', async (t: T) => {
      const { made } = await w1(t);
      const before = await getW1(t, made.id, 'GET before the PATCH');
      const ex = await send(op.update, { id: made.id, body: {} });
      const res = expectAnswer(t, ex, `PATCH /v1/webhooks/${made.id} {}`);
      const after = await getW1(t, made.id, 'GET after the PATCH');
      t.equal(after, before, 'GET after PATCH {} against GET before');
      t.equal(res.json, before, 'the PATCH {} answer against GET before');
      t.note('GET before and after agree, updated_at included');
    }),

    check('W1 PATCH /v1/webhooks/{id} changes description, subscribed_events and enabled, and keeps the rest (Webhook)', async (t: T) => {
      const { made } = await w1(t);
      const before = await getW1(t, made.id, 'GET before the PATCH');
      const change = { description: `conformance W1 patched ${suffix()}`, subscribed_events: ['batch.completed', 'batch.failed'], enabled: false };
      const ex = await send(op.update, { id: made.id, body: change });
      const w = expectAnswer(t, ex, `PATCH /v1/webhooks/${made.id}`).json as Json;
      const after = await getW1(t, made.id, 'GET after the PATCH');
      t.equal(after, w, 'GET after the PATCH against its answer');
      t.equal(w.description, change.description, 'description');
      t.equal(sorted(w.subscribed_events), sorted(change.subscribed_events), 'subscribed_events');
      t.equal(w.enabled, false, 'enabled');
      for (const k of ['id', 'project_id', 'url', 'created_at']) t.equal(w[k], before[k], `${k} (not patched)`);
      t.assert(Date.parse(w.updated_at) >= Date.parse(before.updated_at), `updated_at went back: ${before.updated_at} → ${w.updated_at}`);
      // Back as it was, for the checks that follow.
      const back = await send(op.update, {
        id: made.id,
        body: { description: before.description, subscribed_events: before.subscribed_events, enabled: before.enabled },
      });
      expectAnswer(t, back, 'PATCH back to the original fields');
      t.note(`updated_at ${before.updated_at} → ${w.updated_at}`);
    }),

    check('W1 POST /v1/webhooks/{id}/rotate-secret answers the webhook with a new whsec_ secret (WebhookWithSecret)', async (t: T) => {
      const { made } = await w1(t);
      const before = await getW1(t, made.id, 'GET before the rotation');
      const ex = await send(op.rotate, { id: made.id });
      const w = expectAnswer(t, ex, `POST /v1/webhooks/${made.id}/rotate-secret`).json as Json;
      t.assert(typeof w.secret === 'string' && w.secret !== made.secret, `the secret did not change: ${JSON.stringify(w.secret)}`);
      const after = await getW1(t, made.id, 'GET after the rotation');
      t.equal(withoutSecret(w), after, 'the rotate answer (without secret) against GET after it');
      for (const k of ['id', 'project_id', 'url', 'description', 'subscribed_events', 'enabled', 'created_at']) t.equal(w[k], before[k], `${k} (not rotated)`);
      made.secret = w.secret;
      t.note(`${made.id}: a new secret`);
    }),

    check('W1 POST /v1/webhooks/{id}/test answers {event_id, event_type, delivery_ids} (WebhookTestResponse)', async (t: T) => {
      const { made } = await w1(t);
      const { ex, body } = await testW1(t, made.id);
      expectAnswer(t, ex, `POST /v1/webhooks/${made.id}/test`);
      t.equal(body.event_type, 'task.completed', 'event_type (as asked)');
      t.assert(Array.isArray(body.delivery_ids) && body.delivery_ids.length >= 1, `delivery_ids ${JSON.stringify(body.delivery_ids)}`);
      t.note(`${body.event_id}: ${body.delivery_ids.join(', ')}`);
    }),

    check('W1 GET /v1/webhooks/{id}/events lists the delivery attempts of a test event (WebhookDeliveryListResponse)', async (t: T) => {
      const { made } = await w1(t);
      const { body } = await testW1(t, made.id);
      const { attempts, ex } = await attemptsOf(t, made.id, body.event_id);
      t.assert(attempts.length >= 1, `no delivery of the test event ${body.event_id} is listed: ${exchangeLine(ex, 400)}`);
      const ids = attempts.map((d) => d.id);
      for (const id of body.delivery_ids as string[])
        t.assert(ids.includes(id), `the test's delivery ${id} is not listed (listed for ${body.event_id}: ${ids.join(', ')})`);
      for (const d of attempts) t.equal(d.event_type, 'task.completed', `event_type of delivery ${d.id}`);
      t.assert(attempts[0].attempt === 1, `the first listed attempt of ${body.event_id} is number ${attempts[0].attempt}`);
      t.note(attempts.map((d) => `${d.id} attempt ${d.attempt} ${d.status}`).join('; '));
    }),

    check('W1 DELETE /v1/webhooks/{id} answers {id, deleted: true} (WebhookDeleteResponse)', async (t: T) => {
      const { made, receiver } = await w1(t);
      const ex = await send(op.remove, { id: made.id });
      receiver.close();
      const body = expectAnswer(t, ex, `DELETE /v1/webhooks/${made.id}`).json as Json;
      t.equal(body, { id: made.id, deleted: true }, 'the answer');
      t.note(made.id);
    }),
  ];

  // -------------------------------------------------------------------------------------
  // W2: a test event at the suite's receiver

  const w2 = once(async () => {
    const receiver = new Receiver(ctx.fixtures, { name: 'w2' });
    let made: Made | undefined;
    try {
      made = await receiverWebhook(receiver, 'W2');
      const t = setupT();
      const { body } = await sendTest(t, made.id, 'session.completed');
      const delivery = await waitDelivery(receiver, body.event_id);
      if (!delivery) throw new SetupProblem(noDelivery(receiver, body.event_id, DELIVERY_WAIT_MS));
      return { made, eventId: body.event_id as string, delivery };
    } finally {
      await discard(made?.id, receiver);
    }
  });

  const w2Checks: Check[] = [
    check('W2 a test event reaches a receiver the suite started: a JSON POST whose webhook-id is the event id', async (t: T) => {
      const { eventId, delivery } = await w2(t);
      t.equal(delivery.method, 'POST', 'method');
      t.assert(/^application\/json\b/i.test(delivery.headers['content-type'] ?? ''), `Content-Type ${JSON.stringify(delivery.headers['content-type'])}`);
      t.assert(delivery.jsonError === undefined, `the body is not JSON (${delivery.jsonError}): ${delivery.text.slice(0, 200)}`);
      t.equal(delivery.headers['webhook-id'], eventId, "webhook-id (the test answer's event_id)");
      t.note(`${eventId} arrived`);
    }),

    check('W2 the event comes in the envelope {id ("evt_"), type, created, project_id, text, data} (EventEnvelope)', async (t: T) => {
      const { made, eventId, delivery } = await w2(t);
      const e = delivery.json as Json;
      t.assert(e && typeof e === 'object' && !Array.isArray(e), `the body is not a JSON object: ${delivery.text.slice(0, 200)}`);
      t.equal(Object.keys(e).sort(), ['created', 'data', 'id', 'project_id', 'text', 'type'], "the envelope's fields");
      t.assert(typeof e.id === 'string' && /^evt_[A-Za-z0-9]+$/.test(e.id), `id ${JSON.stringify(e.id)} is not evt_…`);
      t.equal(e.id, eventId, "id (the test answer's event_id)");
      t.equal(e.type, 'session.completed', 'type (the event_type asked for)');
      t.assert(
        typeof e.created === 'string' &&
          /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(e.created) &&
          !Number.isNaN(Date.parse(e.created)),
        `created ${JSON.stringify(e.created)} is not an ISO 8601 timestamp`,
      );
      t.equal(e.project_id, made.webhook.project_id, "project_id (the webhook's)");
      t.assert(typeof e.text === 'string' && e.text.length > 0 && !/[\r\n]/.test(e.text), `text ${JSON.stringify(e.text)} is not one line`);
      t.assert(e.data && typeof e.data === 'object' && !Array.isArray(e.data), `data ${JSON.stringify(e.data)} is not an object`);
      if (schemas.EventEnvelope) {
        const error = ctx.contract.validate(schemas.EventEnvelope, e, 'event');
        t.assert(!error, `against EventEnvelope: ${error}`);
      }
      t.note(`${e.type} ${e.id}: ${e.text}`);
    }),

    check('W2 the delivery carries the Standard Webhooks headers and its signature verifies under the current secret', async (t: T) => {
      const { made, delivery } = await w2(t);
      const h = delivery.headers;
      t.assert(/^evt_[A-Za-z0-9]+$/.test(h['webhook-id'] ?? ''), `webhook-id ${JSON.stringify(h['webhook-id'])}`);
      const ts = Number(h['webhook-timestamp']);
      t.assert(
        /^\d+$/.test(h['webhook-timestamp'] ?? '') && Math.abs(ts - delivery.receivedAt / 1000) <= TIMESTAMP_TOLERANCE_S,
        `webhook-timestamp ${JSON.stringify(h['webhook-timestamp'])} is not integer seconds near the time of arrival (${Math.floor(delivery.receivedAt / 1000)})`,
      );
      t.assert(
        /^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$/.test(h['webhook-signature'] ?? ''),
        `webhook-signature ${JSON.stringify(h['webhook-signature'])}`,
      );
      const problem = verifyProblem(made.secret, delivery);
      t.assert(!problem, `Webhook(secret).verify(body, headers) refuses the delivery: ${problem}`);
      // The check can fail: another secret must not verify.
      t.assert(verifyProblem(`whsec_${randomBytes(32).toString('base64')}`, delivery), 'the delivery also verifies under a random secret');
      t.note(`verified: ${h['webhook-signature'].split(' ').length} signature(s)`);
    }),
  ];

  // -------------------------------------------------------------------------------------
  // W3: rotation

  const w3Check = check('W3 after rotate-secret, deliveries are signed with the new secret', async (t: T) => {
    const receiver = new Receiver(ctx.fixtures, { name: 'w3' });
    let made: Made | undefined;
    try {
      try {
        made = await receiverWebhook(receiver, 'W3');
      } catch (err) {
        if (err instanceof SetupProblem) t.fail(err.message);
        throw err;
      }
      const old = made.secret;
      const ex = await send(op.rotate, { id: made.id });
      const rotated = expectAnswer(t, ex, `POST /v1/webhooks/${made.id}/rotate-secret`).json as Json;
      t.assert(typeof rotated.secret === 'string' && rotated.secret !== old, `the secret did not change: ${JSON.stringify(rotated.secret)}`);
      const { body } = await sendTest(t, made.id, 'task.failed');
      const delivery = await waitDelivery(receiver, body.event_id);
      t.assert(delivery, noDelivery(receiver, body.event_id, DELIVERY_WAIT_MS));
      const problem = verifyProblem(rotated.secret, delivery);
      t.assert(
        !problem,
        `the delivery after the rotation does not verify under the new secret: ${problem} (webhook-signature: ${delivery.headers['webhook-signature']})`,
      );
      const signatures = (delivery.headers['webhook-signature'] ?? '').split(' ').length;
      // The contract documents a 24-hour grace for the old secret; the interface does not require it.
      const oldVerifies = !verifyProblem(old, delivery);
      t.note(
        `verified under the new secret; ${signatures} signature(s); the previous secret ${oldVerifies ? 'also verifies (grace period)' : 'does not verify'}`,
      );
    } finally {
      await discard(made?.id, receiver);
    }
  });

  // -------------------------------------------------------------------------------------
  // W4: every event type's schema

  const eventTypes = [...new Set<string>([...Object.keys(ctx.contract.spec.webhooks ?? {}), ...(schemas.EventType?.enum ?? [])])];
  const w4Receiver = new Receiver(ctx.fixtures, { name: 'w4' });
  let w4Made: Made | undefined;
  const w4 = once(async () => (w4Made = await receiverWebhook(w4Receiver, 'W4')));
  const w4Checks = eventTypes.map((type, i) =>
    check(`W4 ${type}: the test event validates against webhooks.${type} in openapi.yaml`, async (t: T) => {
      try {
        const schema: JsonObject | undefined = ctx.contract.spec.webhooks?.[type]?.post?.requestBody?.content?.['application/json']?.schema;
        t.assert(schema, `the contract documents no schema for ${type}: webhooks.${type}.post.requestBody.content.application/json.schema`);
        const made = await w4(t);
        const { body } = await sendTest(t, made.id, type);
        t.equal(body.event_type, type, "the test answer's event_type");
        const delivery = await waitDelivery(w4Receiver, body.event_id);
        t.assert(delivery, noDelivery(w4Receiver, body.event_id, DELIVERY_WAIT_MS));
        const e = delivery.json as Json;
        t.assert(delivery.jsonError === undefined, `the body is not JSON (${delivery.jsonError}): ${delivery.text.slice(0, 200)}`);
        t.equal(e?.type, type, "the event's type");
        const error = ctx.contract.validate(schema, e, 'event');
        t.assert(!error, `${error}\nevent: ${delivery.text.slice(0, 600)}`);
        t.note(`${e.id}: data {${Object.keys(e.data ?? {}).join(', ')}}`);
      } finally {
        if (i === eventTypes.length - 1) await discard(w4Made?.id, w4Receiver);
      }
    }),
  );

  // -------------------------------------------------------------------------------------
  // W5: retries

  const w5 = once(async () => {
    const receiver = new Receiver(ctx.fixtures, { name: 'w5', status: 500 });
    const made = await receiverWebhook(receiver, 'W5');
    const t = setupT();
    const { body } = await sendTest(t, made.id, 'task.completed');
    const eventId = body.event_id as string;
    const started = Date.now();
    const got = await receiver.waitFor((r) => eventIdOf(r) === eventId, RETRY_WAIT_MS, 2);
    return { receiver, made, eventId, testAnswer: body, got, started };
  });
  let w5Done = false;
  const endW5 = async (t: T) => {
    if (w5Done) return;
    w5Done = true;
    const r = await w5(t).catch(() => undefined);
    await discard(r?.made.id, r?.receiver);
  };

  const w5Checks: Check[] = [
    check('W5 a receiver that answers 500 gets the event again later: same webhook-id and body, signed anew', async (t: T) => {
      const { made, eventId, got, receiver } = await w5(t);
      t.assert(got.length >= 1, noDelivery(receiver, eventId, RETRY_WAIT_MS));
      t.assert(got.length >= 2, `the receiver answered 500 to ${eventId} and got no second attempt within ${RETRY_WAIT_MS / 1000} s`);
      const [first, second] = got;
      t.equal(second.text, first.text, "the second attempt's body against the first");
      t.assert(second.receivedAt > first.receivedAt, 'the attempts arrived out of order');
      for (const [n, r] of [
        [1, first],
        [2, second],
      ] as const) {
        const problem = verifyProblem(made.secret, r);
        t.assert(!problem, `attempt ${n} does not verify under the secret: ${problem}`);
      }
      t.note(`attempt 2 came ${((second.receivedAt - first.receivedAt) / 1000).toFixed(1)} s after attempt 1`);
    }),

    check('W5 the deliveries list the attempts: ≥2 for the event, the first failed with response_status 500', async (t: T) => {
      try {
        const { made, eventId, testAnswer, got } = await w5(t);
        t.assert(got.length >= 2, `no second attempt reached the receiver within ${RETRY_WAIT_MS / 1000} s (see the check above)`);
        // The attempt the receiver saw is recorded once the server has its answer.
        const deadline = Date.now() + 15_000;
        let listed: Json[] = [];
        let last: Exchange | undefined;
        for (;;) {
          const r = await attemptsOf(t, made.id, eventId);
          listed = r.attempts;
          last = r.ex;
          const done = listed.filter((d) => d.response_status === 500 && d.completed_at);
          if (done.length >= 2 || Date.now() > deadline) break;
          await sleep(500);
        }
        const show = listed.map((d) => `#${d.attempt} ${d.status} ${d.response_status}`).join(', ');
        t.assert(listed.length >= 2, `${listed.length} attempt(s) listed for ${eventId} (${show}): ${exchangeLine(last!, 300)}`);
        const numbers = listed.map((d) => d.attempt);
        t.equal(numbers.slice(0, 2), [1, 2], `attempt numbers of ${eventId}`);
        t.assert(new Set(listed.map((d) => d.id)).size === listed.length, `attempts share an id: ${listed.map((d) => d.id).join(', ')}`);
        const [one, two] = listed;
        t.assert(['failed', 'dead'].includes(one.status), `attempt 1 is ${one.status}, not failed`);
        t.equal(one.response_status, 500, 'attempt 1 response_status');
        t.assert(typeof one.error_message === 'string' && one.error_message.length > 0, `attempt 1 error_message ${JSON.stringify(one.error_message)}`);
        t.assert(typeof one.completed_at === 'string', `attempt 1 completed_at ${JSON.stringify(one.completed_at)}`);
        t.assert(
          (testAnswer.delivery_ids as string[]).includes(one.id),
          `attempt 1 is ${one.id}, not a delivery the test answer named (${testAnswer.delivery_ids})`,
        );
        t.assert(
          Date.parse(two.scheduled_at) > Date.parse(one.scheduled_at),
          `attempt 2 is scheduled at ${two.scheduled_at}, not after attempt 1 (${one.scheduled_at})`,
        );
        t.equal(two.response_status, 500, 'attempt 2 response_status (the receiver answered 500)');
        t.note(show);
        // Not asserted (waiting for it would take minutes): where the next attempt is already
        // listed, its delay after attempt 2 (the Webhooks tag documents about 30 s ±20 %).
        const three = listed.find((d) => d.attempt === 3);
        if (three && two.completed_at) {
          const gap = (Date.parse(three.scheduled_at) - Date.parse(two.completed_at)) / 1000;
          t.note(`attempt 3 is scheduled ${gap.toFixed(0)} s after attempt 2 (the Webhooks tag documents about 30 s ±20 %)`);
        }
      } finally {
        await endW5(t);
      }
    }),
  ];

  // -------------------------------------------------------------------------------------
  // G9

  const g9Checks: Check[] = [
    check('G9 webhooks: create → get → delete → get answers 404', async (t: T) => {
      let made: Made | undefined;
      let receiver: Receiver | undefined;
      try {
        try {
          ({ made, receiver } = await plainWebhook('g9'));
        } catch (err) {
          if (err instanceof SetupProblem) t.fail(err.message);
          throw err;
        }
        const got = await send(op.get, { id: made.id });
        t.equal((expectAnswer(t, got, 'GET after create').json as Json).id, made.id, 'the id GET answers');
        const removed = await send(op.remove, { id: made.id });
        expectAnswer(t, removed, 'DELETE');
        const after = await send(op.get, { id: made.id });
        expectAnswer(t, after, 'GET after DELETE', 404);
        t.note(`${made.id}: 200, deleted, 404`);
      } finally {
        await discard(made?.id, receiver);
      }
    }),

    check('G9 webhooks: every operation on a deleted webhook answers 404', async (t: T) => {
      let made: Made | undefined;
      let receiver: Receiver | undefined;
      try {
        try {
          ({ made, receiver } = await plainWebhook('g9-ops'));
        } catch (err) {
          if (err instanceof SetupProblem) t.fail(err.message);
          throw err;
        }
        expectAnswer(t, await send(op.remove, { id: made.id }), 'DELETE');
        const id = made.id;
        const probes: [Operation, unknown][] = [
          [op.get, undefined],
          [op.update, { description: 'after delete' }],
          [op.remove, undefined],
          [op.rotate, undefined],
          [op.test, { event_type: 'task.completed' }],
          [op.deliveries, undefined],
        ];
        for (const [o, body] of probes) {
          const ex = await send(o, body === undefined ? { id } : { id, body });
          expectAnswer(t, ex, `${o.method} ${o.path} on the deleted ${id}`, 404);
        }
        t.note(`${probes.length} operations → 404`);
      } finally {
        await discard(made?.id, receiver);
      }
    }),
  ];

  return [...w1Checks, ...w2Checks, w3Check, ...w4Checks, ...w5Checks, ...g9Checks];
});

/**
 * A stand-in `T` for setups shared by several checks: a failed assertion becomes a
 * SetupProblem, which each check sharing the setup reports.
 */
function setupT(): T {
  const fail = (message: string): never => {
    throw new SetupProblem(message);
  };
  return {
    assert(condition: unknown, message: string): asserts condition {
      if (!condition) fail(message);
    },
    equal(actual, expected, message) {
      const d = firstDifference(actual, expected);
      if (d) fail(`${message}: ${d}`);
    },
    fail,
    skip: fail,
    note() {},
  };
}
