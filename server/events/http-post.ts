// One POST to an untrusted receiver: no redirects followed, a hard deadline over the whole
// exchange (connect, headers, body), the response body read only up to a cap, and the
// address policy applied to the address actually connected to (DNS rebinding safe).
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { blockedRange, guardedLookup, urlHost } from '../net/address-policy.js';
import { parseRetryAfter } from './retry.js';

export interface PostOptions {
  timeoutMs: number;
  /** Bytes of the response body read at most; the rest is discarded with the connection. */
  maxResponseBytes: number;
  /** Bytes of the body kept (as text) in the result. */
  keepResponseBytes: number;
  allowPrivate: boolean;
  agents?: { http: http.Agent; https: https.Agent };
  signal?: AbortSignal;
}

export interface PostResult {
  ok: boolean;
  /** HTTP status, or null when no response arrived. */
  status: number | null;
  /** Why it failed (null on success). */
  error: string | null;
  /** Start of the response body, as text. */
  body: string | null;
  retryAfterMs: number | null;
  durationMs: number;
  /** The caller's signal ended it (shutdown), so it is not a real attempt. */
  aborted: boolean;
}

export function createAgents(maxSockets = 256): { http: http.Agent; https: https.Agent } {
  const opts = { keepAlive: true, keepAliveMsecs: 1000, maxSockets, maxFreeSockets: 64, scheduling: 'lifo' as const };
  return { http: new http.Agent(opts), https: new https.Agent(opts) };
}

function describeError(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const code = e?.code;
  const message = (e?.message ?? String(err)).replace(/\s+/g, ' ').slice(0, 500);
  switch (code) {
    case 'ECONNREFUSED':
      return `Connection refused (${message})`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Host does not resolve (${message})`;
    case 'ECONNRESET':
      return `Connection reset by the receiver (${message})`;
    default:
      return code && !message.includes(code) ? `${code}: ${message}` : message;
  }
}

export function postJson(target: string | URL, body: string, headers: Record<string, string>, options: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const done = (r: Omit<PostResult, 'durationMs' | 'aborted'> & { aborted?: boolean }): PostResult => ({
    aborted: false,
    ...r,
    durationMs: Math.round(performance.now() - started),
  });
  let url: URL;
  try {
    url = typeof target === 'string' ? new URL(target) : target;
  } catch {
    return Promise.resolve(done({ ok: false, status: null, error: 'Invalid URL', body: null, retryAfterMs: null }));
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return Promise.resolve(done({ ok: false, status: null, error: `Unsupported scheme ${url.protocol}`, body: null, retryAfterMs: null }));
  }
  const host = urlHost(url);
  if (!options.allowPrivate && isIP(host)) {
    const why = blockedRange(host);
    if (why !== null) {
      return Promise.resolve(
        done({
          ok: false,
          status: null,
          error: `Refused: ${host} is a ${why} address; requests to private networks are not allowed`,
          body: null,
          retryAfterMs: null,
        }),
      );
    }
  }
  const isHttps = url.protocol === 'https:';
  const mod = isHttps ? https : http;
  const payload = Buffer.from(body);
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    // Set once the status line arrived: a deadline then ends the body read, not the attempt.
    let concludeEarly: (() => void) | undefined;
    let responded = false;
    const finish = (r: PostResult) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve(r);
    };
    const req = mod.request(
      url,
      {
        method: 'POST',
        agent: options.agents ? (isHttps ? options.agents.https : options.agents.http) : undefined,
        lookup: guardedLookup(options.allowPrivate) as never,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(payload.length),
        },
      },
      (res) => {
        responded = true;
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let read = 0;
        let truncated = false;
        const conclude = () => {
          const text = Buffer.concat(chunks)
            .subarray(0, options.keepResponseBytes)
            .toString('utf8')
            .replace(/\u0000/g, '');
          const ok = status >= 200 && status < 300;
          let error: string | null = null;
          if (!ok) {
            if (status >= 300 && status < 400) {
              const loc = res.headers.location;
              error = `Redirect (${status}${loc ? ` to ${String(loc).slice(0, 200)}` : ''}) not followed`;
            } else {
              error = `Receiver answered ${status}`;
            }
          }
          finish(
            done({
              ok,
              status,
              error,
              body: text === '' ? null : text,
              retryAfterMs: ok ? null : parseRetryAfter(res.headers['retry-after'] as string | undefined),
            }),
          );
        };
        concludeEarly = () => {
          truncated = true;
          res.destroy();
          conclude();
        };
        res.on('data', (chunk: Buffer) => {
          if (truncated) return;
          read += chunk.length;
          if (read > options.maxResponseBytes) {
            truncated = true;
            chunks.push(chunk.subarray(0, Math.max(0, chunk.length - (read - options.maxResponseBytes))));
            res.destroy(); // do not read the rest; the connection is not reused
            conclude();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', conclude);
        res.on('error', () => conclude()); // status is known; a broken body does not change it
        res.on('aborted', () => conclude());
      },
    );
    const onAbort = () => {
      req.destroy();
      finish(done({ ok: false, status: null, error: 'Aborted at shutdown', body: null, retryAfterMs: null, aborted: true }));
    };
    if (options.signal) {
      if (options.signal.aborted) return onAbort();
      options.signal.addEventListener('abort', onAbort, { once: true });
    }
    timer = setTimeout(() => {
      if (concludeEarly) return concludeEarly();
      req.destroy();
      finish(done({ ok: false, status: null, error: `Timed out after ${options.timeoutMs} ms`, body: null, retryAfterMs: null }));
    }, options.timeoutMs);
    req.on('error', (err) => {
      // A kept-alive connection that the receiver closed just as we reused it (Node's
      // documented race, `reusedSocket`): the request never reached it, so it goes again,
      // on another connection and within the same deadline, instead of counting as a failed
      // attempt. Each stale connection is used once, so this ends.
      if (req.reusedSocket && !responded && !settled && (err as NodeJS.ErrnoException).code === 'ECONNRESET') {
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        const timeoutMs = Math.max(1, options.timeoutMs - (performance.now() - started));
        void postJson(url, body, headers, { ...options, timeoutMs }).then((r) => resolve({ ...r, durationMs: Math.round(performance.now() - started) }));
        return;
      }
      finish(done({ ok: false, status: null, error: describeError(err), body: null, retryAfterMs: null }));
    });
    req.end(payload);
  });
}
