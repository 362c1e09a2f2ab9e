// Helpers the generic checks share.
import type { Exchange } from '../context.js';
import { describe, type HttpResponse } from '../http.js';
import type { T } from '../runner.js';

/** The response of an exchange, or the check fails saying why there is none. */
export function answered(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

/** "POST /v1/sessions → 200 application/json {…}", short. */
export function exchangeLine(ex: Exchange, bodyChars = 160): string {
  return ex.response ? describe(ex.request, ex.response, bodyChars) : `${ex.request.method} ${ex.request.url}: ${ex.error}`;
}

/** "POST /v1/sessions → 200 application/json", for passing checks. */
export function brief(ex: Exchange): string {
  const r = ex.request;
  let path = r.url;
  try {
    const u = new URL(r.url);
    path = u.pathname + u.search;
  } catch {
    // keep the URL
  }
  return ex.response ? `${r.method} ${path} → ${ex.response.status} ${ex.response.contentType || '(no Content-Type)'}` : `${r.method} ${path}: ${ex.error}`;
}

/** The requests of an exercise: the example body's, then the minimal body's when there was a second try. */
export function attemptsOf(ex: Exchange): Exchange[] {
  return ex.attempts ?? [ex];
}

export type AttemptVerdict = { kind: 'pass'; note: string } | { kind: 'fail'; message: string } | { kind: 'skip'; reason: string };

/**
 * Judges every attempt of an exercise: a failure of any fails, all skipped skips,
 * otherwise passes with the notes of those judged.
 */
export function judgeAttempts(t: T, ex: Exchange, judge: (res: HttpResponse, attempt: Exchange) => AttemptVerdict): void {
  const verdicts = attemptsOf(ex).map((a) => ({ a, v: judge(answered(t, a), a) }));
  const failed = verdicts.filter((x) => x.v.kind === 'fail');
  t.assert(failed.length === 0, failed.map(({ a, v }) => `${v.kind === 'fail' ? v.message : ''}\n${exchangeLine(a, 400)}`).join('\n'));
  const judged = verdicts.filter((x) => x.v.kind === 'pass');
  if (judged.length === 0) t.skip(verdicts.map(({ v }) => (v.kind === 'skip' ? v.reason : '')).join('; '));
  t.note(judged.map(({ v }) => (v.kind === 'pass' ? v.note : '')).join('; '));
}
