// Wires every operation of the generated route table into Hono. For each request:
// authenticate, check the body's type and size, validate parameters and body against the
// contract, call the operation's handler, and serialize the data it returns. Handlers
// never touch Hono; everything a client can see of an error is built here or in errors.ts.
import { randomUUID } from 'node:crypto';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { Logger } from 'pino';
import type { ValidateFunction } from 'ajv';
import { routes, type Route } from '../../generated/routes.js';
import type { Handlers } from '../../generated/handlers.js';
import type { AuthedContext, PublicContext } from './context.js';
import { errorBody } from './errors.js';
import { apiKeyOf, apiKeyRefusal } from '../auth/key-header.js';
import { sameToken } from '../auth/tokens.js';
import { isDatabaseUnavailable, RETRY_AFTER_SECONDS } from '../store/unavailable.js';
import { tracer } from '../tracing.js';
import { compileSchema, createAjv, deref, describeErrors, loadSpec, type JsonObject } from './spec.js';

export type AppHandlers = Handlers<AuthedContext, PublicContext>;

export interface HttpAppOptions {
  handlers: AppHandlers;
  log: Logger;
  /** Resolves an API key to its project, or undefined. */
  authenticate(key: string): Promise<{ projectId: string; apiKeyId: string } | undefined>;
  maxBodyBytes: number;
  maxUploadBytes: number;
  publicUrl: string;
  /** ADMIN_TOKEN: the bearer token of the admin API under /admin; undefined turns that API off (404). */
  adminToken?: string;
  /** Told of every answered request (metrics); the contract's operationId when one served it. */
  observe?(sample: { operationId: string | undefined; status: number; seconds: number }): void;
  /** Run before every route (after request ids and logging), in order: a cluster's forwarding to the node that owns a session. */
  middleware?: readonly MiddlewareHandler[];
}

/** The contract's route that served the request, if one did. */
const route = (c: Context) => c.get('route' as never) as Route | undefined;

/** An incoming X-Request-Id is kept when it is short and plain (it goes into logs and a header). */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

export interface Validators {
  params?: ValidateFunction;
  query?: ValidateFunction;
  body?: ValidateFunction;
  /** The query parameters the operation declares: others are ignored. */
  queryNames: ReadonlySet<string>;
}

/**
 * An operation's validators, compiled from the contract on its first request and kept for
 * the process. Compiling all of them at once cost every start 1.2 s of CPU (2026-11-29), and
 * the test suite creates the app some ninety times; app.test.ts compiles every operation's,
 * so a schema Ajv refuses fails there, not on a user's request.
 */
export function validatorsFor(route: Route): Validators {
  let v = compiled.get(route.operationId);
  if (v) return v;
  ajvs ??= (() => {
    const spec = loadSpec();
    return { spec, strict: createAjv(spec), coercing: createAjv(spec, { coerce: true }) };
  })();
  const { spec, strict, coercing } = ajvs;
  const item = spec.paths[route.path];
  const op = item[route.method.toLowerCase()];
  const params: JsonObject[] = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => deref(spec, p));
  const objectOf = (where: 'path' | 'query') => {
    const list = params.filter((p) => p.in === where);
    if (list.length === 0) return undefined;
    return compileSchema(coercing, {
      type: 'object',
      properties: Object.fromEntries(list.map((p) => [p.name, p.schema ?? {}])),
      required: list.filter((p) => p.required).map((p) => p.name),
    });
  };
  v = { params: objectOf('path'), query: objectOf('query'), queryNames: new Set(params.filter((p) => p.in === 'query').map((p) => p.name as string)) };
  const content = op.requestBody ? (deref(spec, op.requestBody).content ?? {}) : {};
  const schema = content['application/json']?.schema ?? content['multipart/form-data']?.schema;
  if (schema) v.body = compileSchema(strict, schema);
  compiled.set(route.operationId, v);
  return v;
}
const compiled = new Map<string, Validators>();
let ajvs: { spec: JsonObject; strict: ReturnType<typeof createAjv>; coercing: ReturnType<typeof createAjv> } | undefined;

class RequestError extends Error {
  constructor(
    readonly status: 400 | 401 | 413 | 415,
    message: string,
  ) {
    super(message);
  }
}

export function createHttpApp(options: HttpAppOptions): Hono {
  const { handlers, log } = options;
  const docsUrl = `${options.publicUrl}/docs`;
  const app = new Hono();

  const respondError = (c: Context, route: Route | undefined, status: number, message: string, headers?: Record<string, string>) => {
    const shape = route?.errors[status] ?? 'general';
    return c.json(errorBody(shape, status, message, docsUrl) as object, status as 400, headers);
  };

  const handle = (route: Route) => async (c: Context) => {
    const requestId = c.get('requestId' as never) as string;
    c.set('route' as never, route as never);
    const reqLog = log.child({ requestId, operationId: route.operationId });
    try {
      let owner: { projectId: string; apiKeyId: string } | undefined;
      if (route.secured) {
        const given = apiKeyOf((n) => c.req.header(n));
        owner = given ? await options.authenticate(given.key) : undefined;
        if (!owner) throw new RequestError(401, apiKeyRefusal(given));
      }
      const v = validatorsFor(route);
      const params: Record<string, unknown> = { ...c.req.param() };
      refuseUnstorable(params, 'path');
      if (v.params && !v.params(params)) throw new RequestError(400, describeErrors(v.params.errors, 'path'));
      const query = readQuery(c, route, v.queryNames);
      refuseUnstorable(query, 'query');
      if (v.query && !v.query(query)) throw new RequestError(400, describeErrors(v.query.errors, 'query'));
      // Again once coerced: "1e309" becomes Infinity, which Ajv's bounds let through.
      refuseUnstorable(params, 'path');
      refuseUnstorable(query, 'query');
      const body = await readBody(c, route, v, options);

      const clientIp = (c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown';
      const ctx: PublicContext = { requestId, log: reqLog, clientIp, signal: c.req.raw.signal };
      const authed: AuthedContext | undefined = owner && { ...ctx, ...owner };
      const fn = handlers[route.operationId] as (req: unknown, ctx: unknown) => unknown;
      const result = (await fn({ params, query, body, headers: c.req.raw.headers }, authed ?? ctx)) as HandlerResult;
      return serialize(result);
    } catch (err) {
      if (err instanceof RequestError) return respondError(c, route, err.status, err.message);
      // Not the request's fault and not a bug: the store logs the outage once, not here.
      if (isDatabaseUnavailable(err)) return respondError(c, route, 503, err.message, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
      reqLog.error({ err }, 'handler failed');
      return respondError(c, route, 500, 'Internal server error');
    }
  };

  app.use('*', async (c, next) => {
    const incoming = c.req.header('x-request-id');
    const requestId = incoming && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    c.set('requestId' as never, requestId as never);
    const started = performance.now();
    // A trace span for the request (a no-op unless tracing is on), continuing the caller's
    // trace when it sent a traceparent; what the request does runs inside it.
    const parent = propagation.extract(ROOT_CONTEXT, Object.fromEntries(c.req.raw.headers));
    const span = tracer().startSpan(
      c.req.method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': c.req.method, 'url.path': c.req.path, 'request.id': requestId } },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const served = route(c);
      if (served) span.updateName(`${c.req.method} ${served.path}`).setAttributes({ 'http.route': served.path, 'operation.id': served.operationId });
      span.setAttribute('http.response.status_code', c.res.status);
      if (c.res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    c.header('x-request-id', requestId);
    const ms = performance.now() - started;
    const operationId = route(c)?.operationId;
    // Paths only: query strings can carry CDP and live-view tokens.
    log.info({ requestId, method: c.req.method, path: c.req.path, operationId, status: c.res.status, ms: Math.round(ms) }, 'request');
    options.observe?.({ operationId, status: c.res.status, seconds: ms / 1000 });
  });

  for (const m of options.middleware ?? []) app.use('*', m);

  // The admin API, before any route: off (no ADMIN_TOKEN), everything under /admin is
  // unknown, so a scan learns nothing; on, every request needs the token, checked before its
  // body or parameters are looked at. The generator keeps admin operations under /admin.
  const guardAdmin = async (c: Context, next: () => Promise<void>) => {
    if (options.adminToken === undefined) return c.json({ error: { code: 404, message: `No route for ${c.req.method} ${c.req.path}` } }, 404);
    const m = /^Bearer +(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    if (!m || !sameToken(m[1], options.adminToken)) {
      return respondError(c, undefined, 401, 'Invalid or missing admin token: send Authorization: Bearer $ADMIN_TOKEN', { 'WWW-Authenticate': 'Bearer' });
    }
    await next();
  };
  app.use('/admin', guardAdmin);
  app.use('/admin/*', guardAdmin);

  // Register path by path, in the table's order (literal segments first), each path's
  // methods followed by a 405 for the others, so a concrete path always wins over a
  // template that would also match it.
  const byPath = new Map<string, Route[]>();
  for (const route of routes) byPath.set(route.honoPath, [...(byPath.get(route.honoPath) ?? []), route]);
  for (const [honoPath, list] of byPath) {
    for (const route of list) app.on(route.method, honoPath, handle(route));
    const allow = list.map((r) => r.method).join(', ');
    app.all(honoPath, (c) => respondError(c, undefined, 405, `Method ${c.req.method} is not allowed here; allowed: ${allow}`, { Allow: allow }));
  }

  app.onError((err, c) => {
    if (isDatabaseUnavailable(err)) return respondError(c, route(c), 503, err.message, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
    log.error({ err }, 'unhandled error');
    return respondError(c, undefined, 500, 'Internal server error');
  });
  return app;
}

/** Adds the routes the contract does not describe (health, docs) before the API's 404. */
export function finishApp(app: Hono): Hono {
  app.notFound((c) => c.json({ error: { code: 404, message: `No route for ${c.req.method} ${c.req.path}` } }, 404));
  return app;
}

/** The declared query parameters; an undeclared one is ignored, whatever it holds. */
function readQuery(c: Context, route: Route, declared: ReadonlySet<string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, values] of Object.entries(c.req.queries())) {
    // A deepObject parameter arrives as name[key]=value.
    if (!declared.has(name.replace(/\[.*$/, ''))) continue;
    // Several values come either repeated (?m=a&m=b) or comma-separated (?m=a,b).
    out[name] = route.arrayQuery.includes(name) ? values.flatMap((v) => v.split(',')).filter(Boolean) : values[values.length - 1];
  }
  return out;
}

async function readBody(c: Context, route: Route, v: Validators, options: HttpAppOptions): Promise<unknown> {
  if (!route.body) return undefined;
  const type = (c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();
  const multipart = type === 'multipart/form-data';
  const limit = multipart ? options.maxUploadBytes : options.maxBodyBytes;
  const raw = await readLimited(c.req.raw, limit);
  if (raw.length === 0) {
    if (route.body.required) throw new RequestError(400, 'A request body is required');
    return undefined;
  }
  if (!route.body.mediaTypes.includes(type)) {
    throw new RequestError(415, `Content-Type must be ${route.body.mediaTypes.join(' or ')}`);
  }
  if (multipart) {
    const form = await new Request('http://local/', { method: 'POST', headers: { 'content-type': c.req.header('content-type')! }, body: raw as BodyInit })
      .formData()
      .catch(() => {
        throw new RequestError(400, 'Malformed multipart body');
      });
    const fields: Record<string, unknown> = {};
    const shadow: Record<string, unknown> = {};
    for (const [name, value] of form.entries()) {
      if (typeof value === 'string') refuseUnstorable({ [name]: value }, 'body');
      fields[name] = value;
      // Ajv sees file fields as text: their presence is what the schema checks.
      shadow[name] = typeof value === 'string' ? value : '(file)';
    }
    if (v.body && !v.body(shadow)) throw new RequestError(400, describeErrors(v.body.errors, 'body'));
    for (const name of route.body.binaryFields) {
      if (name in fields && typeof fields[name] === 'string') throw new RequestError(400, `body/${name} must be a file`);
    }
    return fields;
  }
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    throw new RequestError(400, 'Malformed JSON body');
  }
  refuseUnstorable(body, 'body');
  if (v.body && !v.body(body)) throw new RequestError(400, describeErrors(v.body.errors, 'body'));
  return body;
}

/** Half of a surrogate pair: text no UTF-8 store can hold. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Deepest nesting of arrays and objects a request may have. */
export const MAX_DEPTH = 64;

/**
 * Refuses (400) what no handler could keep: text with the NUL character or half of a
 * surrogate pair (PostgreSQL stores neither, in text or in jsonb), numbers that are not finite
 * (JSON's 1e309 parses to Infinity), and JSON nested deeper than MAX_DEPTH (jsonb and
 * recursive code have stack limits). Every operation answers 400, so a
 * request the schema alone would accept never reaches the database to fail there as a 500.
 * Iterative: the input is what may be deep.
 */
function refuseUnstorable(value: unknown, where: 'path' | 'query' | 'body'): void {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: value, path: where, depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\0')) throw new RequestError(400, `${path} must not contain the NUL character (U+0000)`);
      if (LONE_SURROGATE.test(v)) throw new RequestError(400, `${path} must be well-formed Unicode (it holds half of a surrogate pair)`);
      continue;
    }
    if (typeof v === 'number' && !Number.isFinite(v)) throw new RequestError(400, `${path} must be a finite number`);
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_DEPTH) throw new RequestError(400, `${path} is nested deeper than ${MAX_DEPTH} levels`);
    for (const [k, child] of Object.entries(v)) {
      const at = Array.isArray(v) ? `${path}/${k}` : `${path}/${k.slice(0, 40)}`;
      if (!Array.isArray(v)) stack.push({ v: k, path: `${path} key ${JSON.stringify(k.slice(0, 40))}`, depth });
      stack.push({ v: child, path: at, depth: depth + 1 });
    }
  }
}

/** Reads the body, refusing (413) past `limit` bytes whether or not Content-Length says so. */
async function readLimited(req: Request, limit: number): Promise<Uint8Array> {
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (declared > limit) throw new RequestError(413, `Request body exceeds ${limit} bytes`);
  if (!req.body) return new Uint8Array();
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel();
      throw new RequestError(413, `Request body exceeds ${limit} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

interface HandlerResult {
  status: number;
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
}

function serialize(result: HandlerResult): Response {
  const headers = new Headers(result.headers);
  if (result.body === undefined) return new Response(null, { status: result.status, headers });
  // Bytes and streams go out as they are, whatever their type (the fetch tool passes
  // upstream JSON through byte for byte); other values are encoded as JSON.
  const raw = result.body instanceof Uint8Array || result.body instanceof ReadableStream;
  if (!raw && (result.contentType === undefined || /^application\/(.+\+)?json$/.test(result.contentType))) {
    headers.set('content-type', result.contentType ?? 'application/json');
    return new Response(JSON.stringify(result.body), { status: result.status, headers });
  }
  headers.set('content-type', result.contentType ?? 'application/octet-stream');
  return new Response(result.body as BodyInit, { status: result.status, headers });
}
