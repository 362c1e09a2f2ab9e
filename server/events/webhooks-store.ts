// Queries behind the eight webhook operations. Every query filters on project_id, so a
// webhook of another project is simply not found (404). Bodies follow design.md: not
// wrapped in `data`; `secret` only in the create and rotate answers.
import type { Db } from '../store/db.js';
import { DELIVERY_ID_SQL, toEnvelope, type EmitSignals, type EventRow } from '../outbox/emit.js';
import { newEventId, newWebhookId } from '../outbox/ids.js';
import { sampleEventData, type SampleContext } from './samples.js';
import { generateSecret, ROTATION_GRACE_MS } from './signing.js';
import type { Secrets } from '../secrets/index.js';
import { sealSecret } from './sealed-secrets.js';
import { summarize } from '../outbox/summarize.js';
import type { AnyEventEnvelope, EventType } from '../outbox/types.js';
import {
  DEFAULT_MAX_WEBHOOKS_PER_PROJECT,
  limitReached,
  validateCreateWebhook,
  validateEventType,
  validatePatchWebhook,
  type DeliveryQuery,
  type DeliveryStatus,
  type WebhookPolicy,
} from './webhooks-logic.js';

export interface WebhookResource {
  id: string;
  project_id: string;
  url: string;
  description: string;
  subscribed_events: EventType[];
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

export interface WebhookWithSecret extends WebhookResource {
  secret: string;
}

export interface DeliveryResource {
  id: string;
  event_id: string;
  event_type: EventType;
  attempt: number;
  status: DeliveryStatus;
  response_status: number | null;
  error_message: string | null;
  scheduled_at: string;
  completed_at: string | null;
}

export interface DeliveryPage {
  data: DeliveryResource[];
  pagination: Pagination;
}

interface WebhookRow {
  id: string;
  project_id: string;
  url: string;
  description: string;
  subscribed_events: string[];
  enabled: boolean;
  created_at: Date | string;
  updated_at: Date | string;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  attempt: number;
  status: string;
  response_status: number | null;
  error_message: string | null;
  scheduled_at: Date | string;
  completed_at: Date | string | null;
}

const iso = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString();

const WEBHOOK_COLUMNS = 'id, project_id, url, description, subscribed_events, enabled, created_at, updated_at';

function toResource(row: WebhookRow): WebhookResource {
  return {
    id: row.id,
    project_id: row.project_id,
    url: row.url,
    description: row.description,
    subscribed_events: row.subscribed_events as EventType[],
    enabled: row.enabled,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function toDeliveryResource(row: DeliveryRow): DeliveryResource {
  return {
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type as EventType,
    attempt: row.attempt,
    status: row.status as DeliveryStatus,
    response_status: row.response_status,
    error_message: row.error_message,
    scheduled_at: iso(row.scheduled_at),
    completed_at: row.completed_at === null ? null : iso(row.completed_at),
  };
}

/** POST /v1/webhooks. Throws WebhookError (400 invalid input, 409 limit reached). */
export async function createWebhook(db: Db, secrets: Secrets, projectId: string, body: unknown, policy: WebhookPolicy): Promise<WebhookWithSecret> {
  const input = await validateCreateWebhook(body, policy);
  const max = policy.maxPerProject ?? DEFAULT_MAX_WEBHOOKS_PER_PROJECT;
  const secret = generateSecret();
  return db.transaction(async (tx) => {
    // Serialize creations per project so two at once cannot both pass the limit.
    await tx.query('SELECT id FROM projects WHERE id = $1 FOR UPDATE', [projectId]);
    const [{ n }] = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE project_id = $1', [projectId]);
    if (n >= max) throw limitReached(max);
    const id = newWebhookId();
    const [row] = await tx.query<WebhookRow>(
      `INSERT INTO webhooks (id, project_id, url, description, subscribed_events, enabled, secret)
       VALUES ($1, $2, $3, $4, $5::text[], $6, $7)
       RETURNING ${WEBHOOK_COLUMNS}`,
      [id, projectId, input.url, input.description, input.subscribed_events, input.enabled, sealSecret(secrets, id, secret)],
    );
    return { ...toResource(row), secret };
  });
}

export interface Pagination {
  page: number;
  limit: number;
  total: number;
  total_pages: number;
}

export interface PageQuery {
  page: number;
  limit: number;
}

const pagination = (q: PageQuery, total: number): Pagination => ({
  page: q.page,
  limit: q.limit,
  total,
  total_pages: Math.ceil(total / q.limit),
});

/** GET /v1/webhooks: a page of the project's webhooks, newest first. */
export async function listWebhooks(
  db: Db,
  projectId: string,
  query: PageQuery = { page: 1, limit: 20 },
): Promise<{ data: WebhookResource[]; pagination: Pagination }> {
  const [{ total }] = await db.query<{ total: number }>('SELECT count(*)::int AS total FROM webhooks WHERE project_id = $1', [projectId]);
  const rows = await db.query<WebhookRow>(
    `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE project_id = $1
      ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
    [projectId, query.limit, (query.page - 1) * query.limit],
  );
  return { data: rows.map(toResource), pagination: pagination(query, total) };
}

/** GET /v1/webhooks/{id}; null → 404. */
export async function getWebhook(db: Db, projectId: string, id: string): Promise<WebhookResource | null> {
  const [row] = await db.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE project_id = $1 AND id = $2`, [projectId, id]);
  return row ? toResource(row) : null;
}

/** PATCH /v1/webhooks/{id}; `{}` changes nothing (not even updated_at). null → 404. */
export async function updateWebhook(
  db: Db,
  signals: EmitSignals,
  projectId: string,
  id: string,
  body: unknown,
  policy: WebhookPolicy,
): Promise<WebhookResource | null> {
  const patch = await validatePatchWebhook(body, policy);
  const sets: string[] = [];
  const params: unknown[] = [projectId, id];
  const set = (column: string, value: unknown, cast = '') => {
    params.push(value);
    sets.push(`${column} = $${params.length}${cast}`);
  };
  if (patch.url !== undefined) set('url', patch.url);
  if (patch.description !== undefined) set('description', patch.description);
  if (patch.subscribed_events !== undefined) set('subscribed_events', patch.subscribed_events, '::text[]');
  if (patch.enabled !== undefined) set('enabled', patch.enabled);
  if (sets.length === 0) return getWebhook(db, projectId, id);
  const [row] = await db.query<WebhookRow>(
    `UPDATE webhooks SET ${sets.join(', ')}, updated_at = now()
      WHERE project_id = $1 AND id = $2
      RETURNING ${WEBHOOK_COLUMNS}`,
    params,
  );
  if (row && patch.enabled === true) signals.deliveriesWritten.emit(); // paused deliveries may go now
  return row ? toResource(row) : null;
}

/** DELETE /v1/webhooks/{id}: removes it and its (pending) deliveries. false → 404. */
export async function deleteWebhook(db: Db, projectId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM webhooks WHERE project_id = $1 AND id = $2 RETURNING id', [projectId, id]);
  return rows.length > 0;
}

/**
 * POST /v1/webhooks/{id}/rotate-secret: a new secret signs from now on; the old one keeps
 * signing too (a second signature) for 24 hours. null → 404.
 */
export async function rotateWebhookSecret(
  db: Db,
  secrets: Secrets,
  projectId: string,
  id: string,
  options: { graceMs?: number } = {},
): Promise<WebhookWithSecret | null> {
  const secret = generateSecret();
  const graceMs = options.graceMs ?? ROTATION_GRACE_MS;
  const [row] = await db.query<WebhookRow>(
    `UPDATE webhooks
        SET previous_secret = secret,
            previous_secret_expires_at = now() + make_interval(secs => $4::double precision),
            secret = $3,
            updated_at = now()
      WHERE project_id = $1 AND id = $2
      RETURNING ${WEBHOOK_COLUMNS}`,
    [projectId, id, sealSecret(secrets, id, secret), graceMs / 1000],
  );
  return row ? { ...toResource(row), secret } : null;
}

/** The answer of POST /v1/webhooks/{id}/test. */
export interface TestEventResult {
  event_id: string;
  event_type: EventType;
  delivery_ids: string[];
}

/**
 * POST /v1/webhooks/{id}/test: stores a synthetic event of the given type (valid against
 * its schema, marked test so it stays out of real event listings) and queues one delivery
 * to this webhook only, whatever it subscribes to. It goes through the same durable,
 * signed, retried path as real events, and is sent even while the webhook is disabled.
 * Throws WebhookError 400 for an unknown type; null → 404.
 */
export async function sendTestEvent(
  db: Db,
  signals: EmitSignals,
  projectId: string,
  id: string,
  eventType: unknown,
  ctx: SampleContext = {},
): Promise<TestEventResult | null> {
  const type = validateEventType(eventType);
  const data = sampleEventData(type, ctx);
  const eventId = newEventId();
  const created = new Date().toISOString();
  const text = summarize(type, data);
  // One statement: the event and its delivery exist together or not at all.
  const rows = await db.query<{ id: string }>(
    `WITH hook AS (
       SELECT id FROM webhooks WHERE project_id = $1 AND id = $2
     ),
     ev AS (
       INSERT INTO events (id, project_id, type, created, text, data, test)
       SELECT $3, $1, $4, $5, $6, $7::jsonb, true FROM hook
       RETURNING id
     )
     INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event_type)
     SELECT ${DELIVERY_ID_SQL}, $1, $2, ev.id, $4 FROM ev
     RETURNING id`,
    [projectId, id, eventId, type, created, text, JSON.stringify(data)],
  );
  const result: TestEventResult | null = rows.length === 0 ? null : { event_id: eventId, event_type: type, delivery_ids: rows.map((r) => r.id) };
  if (result) signals.deliveriesWritten.emit();
  return result;
}

/**
 * GET /v1/webhooks/{id}/events: the webhook's delivery attempts, newest first, one item an
 * attempt (a retried event shows attempt 1, 2, ...; the next scheduled one is `pending`).
 * Filters: status, event_type. null → 404.
 */
export async function listDeliveries(db: Db, projectId: string, webhookId: string, query: DeliveryQuery): Promise<DeliveryPage | null> {
  const [hook] = await db.query('SELECT id FROM webhooks WHERE project_id = $1 AND id = $2', [projectId, webhookId]);
  if (!hook) return null;
  const where = ['project_id = $1', 'webhook_id = $2'];
  const params: unknown[] = [projectId, webhookId];
  if (query.status) {
    params.push(query.status);
    where.push(`status = $${params.length}`);
  }
  if (query.event_type) {
    params.push(query.event_type);
    where.push(`event_type = $${params.length}`);
  }
  const [{ total }] = await db.query<{ total: number }>(`SELECT count(*)::int AS total FROM webhook_deliveries WHERE ${where.join(' AND ')}`, params);
  const rows = await db.query<DeliveryRow>(
    `SELECT id, event_id, event_type, attempt, status, response_status, error_message, scheduled_at, completed_at
       FROM webhook_deliveries WHERE ${where.join(' AND ')}
      ORDER BY seq DESC
      LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, query.limit, (query.page - 1) * query.limit],
  );
  return {
    data: rows.map(toDeliveryResource),
    pagination: pagination(query, total),
  };
}

/** One stored event of the project, as its envelope; null when there is none. */
export async function getEvent(db: Db, projectId: string, eventId: string): Promise<AnyEventEnvelope | null> {
  const [row] = await db.query<EventRow>('SELECT id, type, created, project_id, text, data FROM events WHERE project_id = $1 AND id = $2', [
    projectId,
    eventId,
  ]);
  return row ? toEnvelope(row) : null;
}

/**
 * Sends a delivery's event to its webhook again now (the console's "retry"): the event's
 * next attempt, already scheduled, is brought forward; when there is none (it succeeded,
 * or died after its last attempt) a new attempt is queued. The worker then sends it the
 * usual way, signed, and records it as one more attempt of the event. Null when the
 * project has no such delivery on that webhook.
 */
export async function retryDelivery(
  db: Db,
  signals: EmitSignals,
  projectId: string,
  webhookId: string,
  deliveryId: string,
): Promise<{ delivery_id: string } | null> {
  const [one] = await db.query<{ event_id: string; event_type: string }>(
    'SELECT event_id, event_type FROM webhook_deliveries WHERE project_id = $1 AND webhook_id = $2 AND id = $3',
    [projectId, webhookId, deliveryId],
  );
  if (!one) return null;
  const [waiting] = await db.query<{ id: string }>(
    `UPDATE webhook_deliveries SET scheduled_at = now()
      WHERE project_id = $1 AND webhook_id = $2 AND event_id = $3 AND status = 'pending' AND scheduled_at > now()
      RETURNING id`,
    [projectId, webhookId, one.event_id],
  );
  if (waiting) {
    signals.deliveriesWritten.emit();
    return { delivery_id: waiting.id };
  }
  const [pending] = await db.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE project_id = $1 AND webhook_id = $2 AND event_id = $3 AND status = 'pending'`,
    [projectId, webhookId, one.event_id],
  );
  // Due now or being sent: that attempt is the retry.
  if (pending) return { delivery_id: pending.id };
  // Two retries at once: the unique (event, webhook, attempt) lets one insert win; the
  // other finds nothing to insert and answers the winner.
  const inserted = await db.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, project_id, webhook_id, event_id, event_type, attempt)
     SELECT ${DELIVERY_ID_SQL}, $1, $2, $3, $4, max(attempt) + 1
       FROM webhook_deliveries WHERE project_id = $1 AND webhook_id = $2 AND event_id = $3
     ON CONFLICT (event_id, webhook_id, attempt) DO NOTHING
     RETURNING id`,
    [projectId, webhookId, one.event_id, one.event_type],
  );
  if (inserted[0]) {
    signals.deliveriesWritten.emit();
    return { delivery_id: inserted[0].id };
  }
  const [other] = await db.query<{ id: string }>(
    `SELECT id FROM webhook_deliveries WHERE project_id = $1 AND webhook_id = $2 AND event_id = $3 ORDER BY attempt DESC LIMIT 1`,
    [projectId, webhookId, one.event_id],
  );
  return { delivery_id: other!.id };
}
