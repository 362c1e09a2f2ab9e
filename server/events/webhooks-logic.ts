// The pure rules behind the eight webhook operations: input validation (URL policy, event
// names, fields), the per-project maximum, and paging. Handlers map WebhookError to the
// documented error body: `{error: {code: status, message}}`.
import { assertPublicUrl, UrlPolicyError } from '../net/address-policy.js';
import { EVENT_TYPES, isEventType, type EventType } from '../outbox/types.js';

export const DEFAULT_MAX_WEBHOOKS_PER_PROJECT = 20;
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export type WebhookErrorCode = 'invalid_body' | 'invalid_url' | 'private_url' | 'unknown_event_type' | 'limit_reached' | 'not_found';

export class WebhookError extends Error {
  constructor(
    readonly status: 400 | 404 | 409,
    readonly code: WebhookErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookError';
  }
}

export interface WebhookPolicy {
  /** ALLOW_PRIVATE_NETWORKS: accept private, loopback and link-local targets. */
  allowPrivate: boolean;
  /** WEBHOOK_MAX_PER_PROJECT. */
  maxPerProject?: number;
  /** DNS resolver override, for tests. */
  resolve?: (hostname: string) => Promise<string[]>;
}

export interface CreateWebhookInput {
  url: string;
  subscribed_events: EventType[];
  description: string;
  enabled: boolean;
}

export type PatchWebhookInput = Partial<CreateWebhookInput>;

const bad = (message: string, code: WebhookErrorCode = 'invalid_body') => new WebhookError(400, code, message);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Checks syntax, scheme and (unless allowed) that the host is on a public address. */
export async function validateWebhookUrl(value: unknown, policy: WebhookPolicy): Promise<string> {
  if (typeof value !== 'string' || value.trim() === '') throw bad('url must be a non-empty string', 'invalid_url');
  if (value.length > MAX_URL_LENGTH) throw bad(`url must be at most ${MAX_URL_LENGTH} characters`, 'invalid_url');
  try {
    const { url } = await assertPublicUrl(value.trim(), { allowPrivate: policy.allowPrivate, resolve: policy.resolve });
    if (url.hash) throw bad('url must not have a fragment', 'invalid_url');
    return url.href;
  } catch (err) {
    if (err instanceof UrlPolicyError) {
      throw bad(err.message, err.reason === 'private_address' ? 'private_url' : 'invalid_url');
    }
    throw err;
  }
}

/** A non-empty array of known event type names; duplicates are dropped, order kept. */
export function validateSubscribedEvents(value: unknown): EventType[] {
  if (!Array.isArray(value)) throw bad('subscribed_events must be an array of event type names');
  if (value.length === 0) throw bad('subscribed_events must name at least one event type');
  const out: EventType[] = [];
  for (const v of value) {
    if (!isEventType(v)) {
      throw bad(`subscribed_events: unknown event type ${JSON.stringify(v)}; known types are ${EVENT_TYPES.join(', ')}`, 'unknown_event_type');
    }
    if (!out.includes(v)) out.push(v);
  }
  return out;
}

export function validateEventType(value: unknown): EventType {
  if (!isEventType(value)) {
    throw bad(`event_type must be one of ${EVENT_TYPES.join(', ')}`, 'unknown_event_type');
  }
  return value;
}

function validateDescription(value: unknown): string {
  if (typeof value !== 'string') throw bad('description must be a string');
  if (value.length > MAX_DESCRIPTION_LENGTH) throw bad(`description must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
  return value;
}

function validateEnabled(value: unknown): boolean {
  if (typeof value !== 'boolean') throw bad('enabled must be true or false');
  return value;
}

const CREATE_FIELDS = new Set(['url', 'subscribed_events', 'description', 'enabled']);

function rejectUnknown(body: Record<string, unknown>, allowed: Set<string>): void {
  for (const k of Object.keys(body)) if (!allowed.has(k)) throw bad(`unknown field ${JSON.stringify(k)}`);
}

export async function validateCreateWebhook(body: unknown, policy: WebhookPolicy): Promise<CreateWebhookInput> {
  if (!isPlainObject(body)) throw bad('body must be a JSON object');
  rejectUnknown(body, CREATE_FIELDS);
  if (body.url === undefined) throw bad('url is required', 'invalid_url');
  if (body.subscribed_events === undefined) throw bad('subscribed_events is required');
  const subscribed_events = validateSubscribedEvents(body.subscribed_events);
  const description = body.description === undefined ? '' : validateDescription(body.description);
  const enabled = body.enabled === undefined ? true : validateEnabled(body.enabled);
  const url = await validateWebhookUrl(body.url, policy);
  return { url, subscribed_events, description, enabled };
}

/** PATCH: any subset of url, description, subscribed_events, enabled; {} changes nothing. */
export async function validatePatchWebhook(body: unknown, policy: WebhookPolicy): Promise<PatchWebhookInput> {
  if (!isPlainObject(body)) throw bad('body must be a JSON object');
  rejectUnknown(body, CREATE_FIELDS);
  const out: PatchWebhookInput = {};
  if (body.subscribed_events !== undefined) out.subscribed_events = validateSubscribedEvents(body.subscribed_events);
  if (body.description !== undefined) out.description = validateDescription(body.description);
  if (body.enabled !== undefined) out.enabled = validateEnabled(body.enabled);
  if (body.url !== undefined) out.url = await validateWebhookUrl(body.url, policy);
  return out;
}

export function limitReached(max: number): WebhookError {
  return new WebhookError(409, 'limit_reached', `A project can have at most ${max} webhooks; delete one first`);
}

export interface DeliveryQuery {
  status?: DeliveryStatus;
  event_type?: EventType;
  page: number;
  limit: number;
}

/** Query of GET /v1/webhooks/{id}/events: status, event_type, page (from 1), limit (1..100, default 20). */
export function validateDeliveryQuery(q: Record<string, unknown>): DeliveryQuery {
  const int = (name: string, v: unknown, fallback: number, min: number, max: number): number => {
    if (v === undefined || v === '') return fallback;
    const n = typeof v === 'number' ? v : Number(v);
    if (!Number.isInteger(n) || n < min || n > max) throw bad(`${name} must be a whole number from ${min} to ${max}`);
    return n;
  };
  const out: DeliveryQuery = {
    page: int('page', q.page, 1, 1, 1_000_000),
    limit: int('limit', q.limit, 20, 1, 100),
  };
  if (q.status !== undefined && q.status !== '') {
    if (!DELIVERY_STATUSES.includes(q.status as DeliveryStatus)) throw bad(`status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    out.status = q.status as DeliveryStatus;
  }
  if (q.event_type !== undefined && q.event_type !== '') out.event_type = validateEventType(q.event_type);
  return out;
}
