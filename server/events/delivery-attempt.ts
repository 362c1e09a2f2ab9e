// One delivery attempt: the event's envelope signed per Standard Webhooks (signing.ts),
// POSTed to the webhook (http-post.ts), and the result classified. A send that fails
// resolves to a failed result like any other, never to a rejection.
import type { Claimed } from './delivery-claim.js';
import { postJson, type PostOptions, type PostResult } from './http-post.js';
import { activeSecrets, signatureHeaders } from './signing.js';

const SLOW_MS = 5_000;

export interface AttemptOptions extends Pick<PostOptions, 'maxResponseBytes' | 'keepResponseBytes' | 'allowPrivate'> {
  userAgent: string;
  requestTimeoutMs: number;
  agents: NonNullable<PostOptions['agents']>;
  /** The plain secret of a stored (sealed) one of the webhook's; throws when it cannot be opened. */
  openSecret(webhookId: string, stored: string): string;
}

/**
 * The envelope (the contract, openapi.yaml: its Events section: id, type, created, project_id, text, data) as JSON,
 * with the stored data's text spliced in: parsing it from the claim and serializing it
 * again cost more per attempt than signing.
 */
export function envelopeBody(c: Pick<Claimed, 'event_id' | 'type' | 'created' | 'project_id' | 'text' | 'data_json'>): string {
  const created = (c.created instanceof Date ? c.created : new Date(c.created)).toISOString();
  return `{"id":${JSON.stringify(c.event_id)},"type":${JSON.stringify(c.type)},"created":"${created}","project_id":${JSON.stringify(c.project_id)},"text":${JSON.stringify(c.text)},"data":${c.data_json}}`;
}

export function attempt(c: Claimed, o: AttemptOptions, signal: AbortSignal): Promise<PostResult> {
  const failed = (error: string): PostResult => ({ ok: false, status: null, error, body: null, retryAfterMs: null, durationMs: 0, aborted: false });
  // A secret that does not open was altered in the database or sealed under another key.
  // Without the current one nothing is sent (never unsigned); a previous one that does not
  // open is left out, so rotating away from an unreadable secret mends the webhook at once.
  const [current, ...previous] = activeSecrets(c);
  const open = (stored: string) => {
    try {
      return o.openSecret(c.webhook_id, stored);
    } catch {
      return undefined;
    }
  };
  const signing = open(current!);
  if (signing === undefined)
    return Promise.resolve(failed("The webhook's signing secret could not be read (altered, or sealed under another secrets key); rotate it"));
  const secrets = [signing, ...previous.map(open).filter((s) => s !== undefined)];
  const body = envelopeBody(c);
  const headers = {
    ...signatureHeaders(secrets, c.event_id, body),
    'user-agent': o.userAgent,
  };
  return postJson(c.url, body, headers, {
    timeoutMs: o.requestTimeoutMs,
    maxResponseBytes: o.maxResponseBytes,
    keepResponseBytes: o.keepResponseBytes,
    allowPrivate: o.allowPrivate,
    agents: o.agents,
    signal,
  }).catch((err): PostResult => failed(String((err as Error)?.message ?? err)));
}

/** The webhook was slow: it timed out or answered after SLOW_MS (the worker then sends it less at once). */
export function wasSlow(result: PostResult): boolean {
  return result.durationMs >= SLOW_MS || (result.status === null && /^Timed out/.test(result.error ?? ''));
}
