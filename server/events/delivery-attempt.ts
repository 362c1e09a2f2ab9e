// One delivery attempt: the event's envelope signed per Standard Webhooks (signing.ts),
// POSTed to the webhook (http-post.ts), and the result classified. A send that fails
// resolves to a failed result like any other, never to a rejection.
import { toEnvelope } from '../outbox/emit.js';
import type { Claimed } from './delivery-claim.js';
import { postJson, type PostOptions, type PostResult } from './http-post.js';
import { activeSecrets, signatureHeaders } from './signing.js';

const SLOW_MS = 5_000;

export interface AttemptOptions extends Pick<PostOptions, 'maxResponseBytes' | 'keepResponseBytes' | 'allowPrivate'> {
  userAgent: string;
  requestTimeoutMs: number;
  agents: NonNullable<PostOptions['agents']>;
}

export function attempt(c: Claimed, o: AttemptOptions, signal: AbortSignal): Promise<PostResult> {
  const envelope = toEnvelope({ id: c.event_id, type: c.type, created: c.created, project_id: c.project_id, text: c.text, data: c.data });
  const body = JSON.stringify(envelope);
  const headers = {
    ...signatureHeaders(activeSecrets(c), c.event_id, body),
    'user-agent': o.userAgent,
  };
  return postJson(c.url, body, headers, {
    timeoutMs: o.requestTimeoutMs,
    maxResponseBytes: o.maxResponseBytes,
    keepResponseBytes: o.keepResponseBytes,
    allowPrivate: o.allowPrivate,
    agents: o.agents,
    signal,
  }).catch(
    (err): PostResult => ({
      ok: false,
      status: null,
      error: String((err as Error)?.message ?? err),
      body: null,
      retryAfterMs: null,
      durationMs: 0,
      aborted: false,
    }),
  );
}

/** The webhook was slow: it timed out or answered after SLOW_MS (the worker then sends it less at once). */
export function wasSlow(result: PostResult): boolean {
  return result.durationMs >= SLOW_MS || (result.status === null && /^Timed out/.test(result.error ?? ''));
}
