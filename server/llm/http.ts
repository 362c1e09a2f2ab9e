// One POST to the model's server, with a time-out and errors that never carry the key or
// the request (the conversation may hold page content and secrets' names).
import { LlmError } from './types.js';

export async function postJson(url: string, headers: Record<string, string>, body: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const abort = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal: abort });
  } catch (err) {
    if (timeout.aborted) throw new LlmError(`The model did not answer within ${timeoutMs / 1000} s`);
    if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new LlmError('The model call was cancelled');
    throw new LlmError(
      `The model's server could not be reached (${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message})`,
    );
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) throw new LlmError(`The model's server answered ${res.status}: ${errorMessage(text)}`, res.status);
  try {
    return JSON.parse(text);
  } catch {
    throw new LlmError(`The model's server answered ${res.status} with a body that is not JSON`, res.status);
  }
}

/** The provider's own error message (both protocols use {error: {message}}), shortened. */
function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown } | string };
    const m = typeof body.error === 'string' ? body.error : body.error?.message;
    if (typeof m === 'string') return m.slice(0, 300);
  } catch {
    // not JSON
  }
  return text.slice(0, 300) || '(no body)';
}
