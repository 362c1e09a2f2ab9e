// The one way the suite talks HTTP: fetch with a time limit, no redirects followed, the
// whole body read, and a short description of the exchange for failure messages.

export interface HttpRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | FormData;
  timeoutMs: number;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  /** The media type of Content-Type, lower case, without parameters; '' when absent. */
  contentType: string;
  bytes: Uint8Array;
  text: string;
  /** The body parsed as JSON when it parses; `undefined` with `jsonError` otherwise. */
  json: unknown;
  jsonError?: string;
  durationMs: number;
}

/** The request did not get an answer: refused connection, reset, or time-out. */
export class HttpError extends Error {
  constructor(
    message: string,
    readonly request: HttpRequest,
  ) {
    super(message);
  }
}

export function mediaType(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0].trim().toLowerCase();
}

export function isJsonMediaType(type: string): boolean {
  return /^application\/([a-z0-9.+-]+\+)?json$/.test(type);
}

export async function send(req: HttpRequest): Promise<HttpResponse> {
  const started = performance.now();
  let res: Response;
  const signal = AbortSignal.timeout(req.timeoutMs);
  try {
    res = await fetch(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body as BodyInit | undefined,
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    throw new HttpError(`${req.method} ${pathOf(req.url)}: ${reason(err, req.timeoutMs)}`, req);
  }
  let bytes: Uint8Array;
  try {
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (err) {
    throw new HttpError(`${req.method} ${pathOf(req.url)}: reading the body: ${reason(err, req.timeoutMs)}`, req);
  }
  const text = new TextDecoder().decode(bytes);
  let json: unknown;
  let jsonError: string | undefined;
  if (bytes.length === 0) {
    jsonError = 'the body is empty';
  } else {
    try {
      json = JSON.parse(text);
    } catch (err) {
      jsonError = (err as Error).message;
    }
  }
  return {
    status: res.status,
    headers: res.headers,
    contentType: mediaType(res.headers.get('content-type')),
    bytes,
    text,
    json,
    jsonError,
    durationMs: Math.round(performance.now() - started),
  };
}

function reason(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = e?.cause;
  if (cause) return `${cause.code ?? cause.name}: ${cause.message}`;
  return e?.message ?? String(err);
}

export function pathOf(url: string): string {
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return url;
  }
}

/** "POST /v1/sessions → 400 application/json {"error":…}", the body cut short. */
export function describe(req: Pick<HttpRequest, 'method' | 'url'>, res: HttpResponse, bodyChars = 300): string {
  const body = res.bytes.length === 0 ? '(empty body)' : isText(res.contentType) ? clip(res.text, bodyChars) : `(${res.bytes.length} bytes)`;
  return `${req.method} ${pathOf(req.url)} → ${res.status} ${res.contentType || '(no Content-Type)'} ${body}`;
}

function isText(type: string): boolean {
  return type === '' || type.startsWith('text/') || isJsonMediaType(type) || /xml|yaml|javascript/.test(type);
}

export function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}…` : one;
}
