// What every check works with: the contract, the server's address and keys, a way to
// build and send a valid request for any operation (taking ids from resources created
// earlier in the run), the registry of created resources, and the cleanup that removes
// them at the end.
import { randomBytes } from 'node:crypto';
import type { Collection, Contract, JsonObject, Operation } from './contract.js';
import { normalizeName } from './contract.js';
import { HttpError, send, type HttpRequest, type HttpResponse } from './http.js';
import { bodyHasExample, buildRequest, render, type BuiltRequest } from './requests.js';
import { Registry, type Resource } from './registry.js';
import { FixtureServer } from './fixtures.js';
import { keyFromAgentAccess, type KeyResult } from './agent-access.js';

export interface SuiteOptions {
  baseUrl: string;
  apiKey?: string;
  otherApiKey?: string;
  /** Against a mock (Prism): no keys, no resources; stateful checks are skipped. */
  stateless?: boolean;
  /** Time limit of one request. */
  timeoutMs?: number;
  /** The fixture server's address as the server under test reaches it. */
  fixturesUrl?: string;
  fixturesDir?: string;
  /** Where warnings go as they happen (they are also kept in `warnings`). */
  warn?: (line: string) => void;
  /** How long cleanup waits for a pending resource (a batch) to show what it spawned. */
  cleanupWaitMs?: number;
  /** G12: hostile cases an operation (default 2), and the seed that picks them (default 1). */
  fuzzCases?: number;
  fuzzSeed?: number;
  /** The operator's ADMIN_TOKEN: without it the admin API's rules (AD*) are skipped. */
  adminToken?: string;
}

/** Which key a request carries: the run's key, none, a wrong one, or a given one. */
export type KeyChoice = 'main' | 'none' | 'wrong' | { value: string | undefined };

export interface Exchange {
  built: BuiltRequest;
  request: HttpRequest;
  response?: HttpResponse;
  /** Why there is no response: refused connection, time-out… */
  error?: string;
  /**
   * Every request of an exercise, this one last: when the server refused the contract's
   * example body (400, 409, 422), a second try with only the required fields follows.
   */
  attempts?: Exchange[];
}

/** Answers to the example body after which the suite tries a minimal body. */
const RETRY_MINIMAL = [400, 409, 422];

export interface CallOptions {
  key?: KeyChoice;
  timeoutMs?: number;
  rawBody?: { contentType: string; text: string };
  bodyValue?: unknown;
  /** What the request creates is the caller's own (registered `own`): the caller removes it. */
  own?: boolean;
}

/** Used when no key is given against a mock, which only checks that one is present. */
export const PLACEHOLDER_KEY = 'sk_conformance_placeholder';

/** Requests the server should refuse at once (auth, validation, 405) wait at most this long. */
export const PROBE_TIMEOUT_MS = 10_000;

export class SuiteContext {
  readonly registry = new Registry();
  readonly fixtures: FixtureServer;
  readonly wrongKey = `sk_conformance_wrong_${randomBytes(12).toString('hex')}`;
  readonly warnings: string[] = [];
  readonly timeoutMs: number;
  readonly probeTimeoutMs: number;
  /** The key of the project under test; where it came from. */
  mainKey?: string;
  mainKeySource = 'none';
  private exercises = new Map<string, Promise<Exchange>>();
  private otherKeyResult?: Promise<KeyResult>;
  private ensuring = new Map<string, Promise<Resource | undefined>>();
  /** Operations whose example body this server refuses, so their valid request is minimal. */
  private minimalBody = new Set<string>();

  constructor(
    readonly contract: Contract,
    readonly options: SuiteOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.probeTimeoutMs = Math.min(this.timeoutMs, PROBE_TIMEOUT_MS);
    this.fixtures = new FixtureServer({ publicUrl: options.fixturesUrl, dir: options.fixturesDir });
    if (options.apiKey) {
      this.mainKey = options.apiKey;
      this.mainKeySource = '--api-key';
    }
  }

  get baseUrl(): string {
    return this.options.baseUrl.replace(/\/+$/, '');
  }

  get stateless(): boolean {
    return this.options.stateless === true;
  }

  /** Without --api-key: a key from agent access, or the placeholder a mock accepts. */
  async init(): Promise<void> {
    if (this.mainKey) return;
    if (this.stateless) {
      this.mainKey = PLACEHOLDER_KEY;
      this.mainKeySource = 'placeholder (--stateless)';
      return;
    }
    const got = await keyFromAgentAccess(this.contract, this.baseUrl, this.timeoutMs);
    if (got.key) {
      this.mainKey = got.key;
      this.mainKeySource = 'agent access';
    } else {
      this.warn(`no --api-key and no key from agent access (${got.reason}): operations that need a key will answer 401`);
    }
  }

  warn(line: string): void {
    this.warnings.push(line);
    this.options.warn?.(line);
  }

  /** Another project's key: --other-api-key, else one from the agent-access flow. */
  otherKey(): Promise<KeyResult> {
    return (this.otherKeyResult ??= (async (): Promise<KeyResult> => {
      if (this.options.otherApiKey) return { key: this.options.otherApiKey };
      const got = await keyFromAgentAccess(this.contract, this.baseUrl, this.timeoutMs);
      if (got.key && got.key === this.mainKey) return { reason: 'agent access answered the same key as the run key' };
      return got.key ? got : { reason: `no --other-api-key, and ${got.reason}` };
    })());
  }

  keyValue(choice: KeyChoice = 'main'): string | undefined {
    if (choice === 'main') return this.mainKey;
    if (choice === 'none') return undefined;
    if (choice === 'wrong') return this.wrongKey;
    return choice.value;
  }

  // -------------------------------------------------------------------------------------
  // Requests

  /**
   * A valid request for `op`: ids of live resources for its path parameters (created on
   * demand by exercising the collection's creator), a brand-new resource for the item a
   * DELETE removes when `fresh` (the caller's own: `release` removes it), ids for top-level
   * fields that name a resource (session_id in a body, sessionId in a query).
   */
  async build(op: Operation, options: { fresh?: boolean; pathParams?: Record<string, string>; body?: 'example' | 'minimal' } = {}): Promise<BuiltRequest> {
    const pathParams: Record<string, string> = { ...options.pathParams };
    const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const owners = names.map((n) => this.contract.collectionFor(op.path, n));
    const last = owners.map((c, i) => (c?.creator && c.creator !== op ? i : -1)).reduce((a, b) => Math.max(a, b), -1);
    for (let i = 0; i < names.length; i++) {
      const c = owners[i];
      if (pathParams[names[i]] !== undefined || !c?.creator || c.creator === op) continue;
      const r = options.fresh && i === last ? ((await this.createFresh(c, { own: true })) ?? (await this.ensure(c))) : await this.ensure(c);
      if (!r) continue;
      pathParams[names[i]] = r.id;
      for (const [k, v] of Object.entries(r.pathParams)) if (names.includes(k) && pathParams[k] === undefined) pathParams[k] = v;
    }
    const body = options.body ?? (this.minimalBody.has(op.id) ? 'minimal' : 'example');
    const built = buildRequest(this.contract, op, { pathParams, body });
    await this.substituteIds(built);
    this.economize(built);
    this.uniquify(built);
    return built;
  }

  /** Sends a built request; registers what a creator made and what a DELETE removed. */
  async call(built: BuiltRequest, options: CallOptions = {}): Promise<Exchange> {
    const apiKey = this.keyValue(options.key);
    const request = render(this.baseUrl, built, {
      apiKey,
      credentials: this.contract.credentialsOf(built.op),
      timeoutMs: options.timeoutMs ?? this.timeoutMs,
      rawBody: options.rawBody,
      ...('bodyValue' in options ? { bodyValue: options.bodyValue } : {}),
    });
    let response: HttpResponse;
    try {
      response = await send(request);
    } catch (err) {
      if (err instanceof HttpError) return { built, request, error: err.message };
      throw err;
    }
    if (response.status >= 200 && response.status < 300) this.track(built, response, apiKey, options.own === true);
    return { built, request, response };
  }

  /**
   * Removes the resources of its own that a request was built on and that are still live (a
   * session made for one DELETE under it): otherwise each holds what it holds, a browser, until
   * the run's cleanup, and a dozen of them filled a server's browsers and left a task run
   * queued past its check's wait.
   */
  async release(built: BuiltRequest): Promise<void> {
    const ids = new Set(Object.values(built.pathParams));
    for (const r of this.registry.live()) {
      if (!r.own || !ids.has(r.id)) continue;
      const outcome = await this.remove(r);
      if (typeof outcome === 'object') this.warn(outcome.problem);
    }
  }

  /** The run's one valid request for `op` (G1–G5 look at it), sent once. */
  exercise(op: Operation): Promise<Exchange> {
    let p = this.exercises.get(op.id);
    if (!p) {
      // G1-G5 look at its answer only: a DELETE's own item goes at once.
      p = this.callValid(op, { fresh: op.method === 'DELETE' }).then(async (ex) => (await this.release(ex.built), ex));
      this.exercises.set(op.id, p);
    }
    return p;
  }

  /**
   * Builds and sends a valid request; when the server refuses the contract's example body
   * (it may ask for features this server lacks), tries again with the required fields only.
   */
  async callValid(op: Operation, options: { fresh?: boolean; own?: boolean } = {}): Promise<Exchange> {
    const built = await this.build(op, options);
    const first = await this.call(built, { own: options.own });
    const status = first.response?.status;
    if (status === undefined || !RETRY_MINIMAL.includes(status) || this.minimalBody.has(op.id) || !bodyHasExample(this.contract, op)) {
      return { ...first, attempts: [first] };
    }
    const second = await this.call(await this.build(op, { pathParams: built.pathParams, body: 'minimal' }), { own: options.own });
    if (ok(second)) this.minimalBody.add(op.id);
    return { ...second, attempts: [first, second] };
  }

  /** A live resource of the collection, made by exercising its creator when there is none yet. */
  ensure(c: Collection): Promise<Resource | undefined> {
    const live = this.registry.latest(c.path, this.mainKey ?? null);
    if (live || !c.creator) return Promise.resolve(live);
    // Concurrent checks wait for the same creation.
    let pending = this.ensuring.get(c.path);
    if (!pending) {
      pending = this.makeLive(c).finally(() => this.ensuring.delete(c.path));
      this.ensuring.set(c.path, pending);
    }
    return pending;
  }

  private async makeLive(c: Collection): Promise<Resource | undefined> {
    const first = !this.exercises.has(c.creator!.id);
    const ex = await this.exercise(c.creator!);
    const made = this.registry.latest(c.path, this.mainKey ?? null);
    if (made || first || !ok(ex)) return made;
    // Created earlier and removed since: make another.
    return this.createFresh(c);
  }

  /** A new resource of the collection (the caller's own with `own`), or undefined when its creator does not make one. */
  async createFresh(c: Collection, options: { own?: boolean } = {}): Promise<Resource | undefined> {
    if (!c.creator) return undefined;
    // The shared one comes first, so that later checks find the run's usual resource.
    if (!this.exercises.has(c.creator.id)) await this.ensure(c);
    if (!ok(await this.exercises.get(c.creator.id))) return undefined;
    const ex = await this.callValid(c.creator, { own: options.own });
    if (!ok(ex)) return undefined;
    const id = extractId(c, ex.built, ex.response!);
    return id === undefined ? undefined : this.registry.get(c.path, id);
  }

  private track(built: BuiltRequest, res: HttpResponse, apiKey: string | undefined, own: boolean) {
    const op = built.op;
    const created = this.contract.createdBy(op);
    if (created) {
      const id = extractId(created, built, res);
      if (id === undefined) {
        this.warn(`${op.id} answered ${res.status} but its body names no id the suite can find: whatever it created is not cleaned up`);
      } else {
        const params = op.path.match(/\{[^}]+\}/g)?.map((s) => s.slice(1, -1)) ?? [];
        const parents = Object.fromEntries(params.map((p) => [p, built.pathParams[p]]));
        this.registry.add({ collection: created.path, id, pathParams: { ...parents, [created.param]: id }, createdBy: op.id, apiKey, ...(own ? { own } : {}) });
      }
    }
    for (const c of this.contract.collections.values()) {
      if (c.deleter === op) this.registry.markDeleted(c.path, built.pathParams[c.param]);
    }
  }

  /** Top-level query and body fields that name another collection's item get a live id. */
  private async substituteIds(built: BuiltRequest) {
    const own = this.contract.createdBy(built.op);
    const resolve = async (name: string): Promise<string | undefined> => {
      const c = this.contract.collectionForKey(name);
      if (!c || c === own) return undefined;
      return (await this.ensure(c))?.id;
    };
    for (const entry of built.query) {
      const id = await resolve(entry[0]);
      if (id !== undefined) entry[1] = id;
    }
    const value = built.body?.value;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const fields = value as Record<string, unknown>;
      for (const [k, v] of Object.entries(fields)) {
        if (typeof v !== 'string') continue;
        const id = await resolve(k);
        if (id !== undefined) fields[k] = id;
      }
    }
  }

  /**
   * Quantities of things to create (a top-level integer `count`) take their smallest
   * allowed value: the contract's example may ask for 50 browsers.
   */
  private economize(built: BuiltRequest) {
    const value = built.body?.value;
    if (!value || typeof value !== 'object' || Array.isArray(value)) return;
    const schema = this.bodySchema(built);
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v !== 'number' || !['count', 'quantity'].includes(normalizeName(k))) continue;
      const p = schema?.properties?.[k] ? this.contract.deref(schema.properties[k]) : {};
      const min = typeof p.minimum === 'number' ? Math.max(p.minimum, 1) : 1;
      (value as Record<string, unknown>)[k] = typeof p.maximum === 'number' ? Math.min(min, p.maximum) : min;
    }
  }

  /** A creator's field that becomes the item's id (a profile's name) gets a unique suffix. */
  private uniquify(built: BuiltRequest) {
    const c = this.contract.createdBy(built.op);
    const value = built.body?.value as Record<string, unknown> | undefined;
    if (!c || !value || typeof value !== 'object' || typeof value[c.param] !== 'string') return;
    const suffix = `-${randomBytes(3).toString('hex')}`;
    const p = this.bodySchema(built)?.properties?.[c.param];
    const max = p ? this.contract.deref(p).maxLength : undefined;
    const base = value[c.param] as string;
    value[c.param] = (typeof max === 'number' ? base.slice(0, Math.max(0, max - suffix.length)) : base) + suffix;
  }

  private bodySchema(built: BuiltRequest): JsonObject | undefined {
    const content = built.op.requestBody?.content ?? {};
    const key = Object.keys(content).find((k) => k.split(';')[0].trim().toLowerCase() === built.body?.mediaType);
    const schema = key ? content[key]?.schema : undefined;
    return schema ? this.contract.deref(schema) : undefined;
  }

  // -------------------------------------------------------------------------------------
  // Cleanup

  /**
   * Removes every live resource the run created, newest first. Resources that spawn
   * others (a batch's sessions) are read first so that what they made is removed too.
   * Answers one line a problem, and a summary line.
   */
  async cleanup(): Promise<string[]> {
    const lines: string[] = [];
    try {
      await this.harvest();
      const removed = new Map<string, number>();
      for (const r of [...this.registry.live()].reverse()) {
        const outcome = await this.remove(r);
        if (outcome === 'removed') removed.set(r.collection, (removed.get(r.collection) ?? 0) + 1);
        else if (typeof outcome === 'object') lines.push(outcome.problem);
      }
      const counts = [...removed].map(([k, n]) => `${n} × ${k}`).join(', ');
      lines.push(`cleanup: ${counts ? `removed ${counts}` : 'nothing to remove'}`);
    } finally {
      await this.fixtures.close();
    }
    return lines;
  }

  /** Removes a live resource with its collection's DELETE: removed, gone already, or why it could not. */
  private async remove(r: Resource): Promise<'removed' | 'gone' | { problem: string }> {
    const c = this.contract.collections.get(r.collection);
    if (!c?.deleter) return { problem: `cannot remove ${r.collection} ${r.id}: the contract has no DELETE ${c?.itemPath ?? `${r.collection}/{id}`}` };
    if (r.apiKey === undefined) return { problem: `cannot remove ${r.collection} ${r.id}: it was created without a key` };
    const ex = await this.call(buildRequest(this.contract, c.deleter, { pathParams: r.pathParams }), { key: { value: r.apiKey } });
    const status = ex.response?.status;
    if (status !== undefined && status >= 200 && status < 300) return 'removed';
    if (status === 404 && !(await this.stillThere(c, r))) {
      this.registry.markDeleted(r.collection, r.id);
      return 'gone';
    }
    return { problem: `could not remove ${r.collection} ${r.id}: ${c.deleter.method} ${c.itemPath} → ${ex.error ?? status}` };
  }

  /** Whether an item a DELETE answered 404 for still reads 2xx (the DELETE was not served). */
  private async stillThere(c: Collection, r: Resource): Promise<boolean> {
    if (!c.getter) return false;
    const ex = await this.call(buildRequest(this.contract, c.getter, { pathParams: r.pathParams }), { key: { value: r.apiKey } });
    return ok(ex);
  }

  /** Registers the resources that live resources made on their own (a batch's sessions). */
  private async harvest() {
    const deadline = Date.now() + (this.options.cleanupWaitMs ?? 10_000);
    for (const r of this.registry.live()) {
      const c = this.contract.collections.get(r.collection);
      if (!c?.getter || r.apiKey === undefined || !this.spawns(c)) continue;
      for (;;) {
        const ex = await this.call(buildRequest(this.contract, c.getter, { pathParams: r.pathParams }), { key: { value: r.apiKey } });
        const body = ex.response?.status === 200 ? ex.response.json : undefined;
        if (body === undefined) break;
        this.collectIds(body, c, r);
        const status = (body as { status?: unknown; data?: { status?: unknown } }).status ?? (body as { data?: { status?: unknown } }).data?.status;
        if (status !== 'pending' || Date.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  /** Whether a collection's item lists ids of another removable collection (sessions[].session_id). */
  spawns(c: Collection): boolean {
    const schema = c.getter?.responses['200']?.content?.['application/json']?.schema;
    const names = new Set<string>();
    const walk = (node: JsonObject | undefined, inArray: boolean, depth: number) => {
      if (!node || typeof node !== 'object' || depth > 8) return;
      const s = this.contract.deref(node);
      for (const [k, v] of Object.entries<JsonObject>(s.properties ?? {})) {
        if (inArray) names.add(k);
        walk(v, inArray, depth + 1);
      }
      if (s.items) walk(s.items, true, depth + 1);
      for (const key of ['allOf', 'oneOf', 'anyOf']) for (const sub of s[key] ?? []) walk(sub, inArray, depth + 1);
    };
    walk(schema, false, 0);
    return [...names].some((n) => {
      const other = this.contract.collectionForKey(n);
      return other && other !== c && other.deleter;
    });
  }

  private collectIds(value: unknown, from: Collection, parent: Resource) {
    if (Array.isArray(value)) return value.forEach((v) => this.collectIds(v, from, parent));
    if (!value || typeof value !== 'object') return;
    for (const [k, v] of Object.entries(value)) {
      const c = typeof v === 'string' ? this.contract.collectionForKey(k) : undefined;
      if (c && c !== from && c.deleter && !this.registry.get(c.path, v as string)) {
        this.registry.add({
          collection: c.path,
          id: v as string,
          pathParams: { [c.param]: v as string },
          createdBy: `${parent.collection}/${parent.id}`,
          apiKey: parent.apiKey,
        });
      } else if (typeof v === 'object') {
        this.collectIds(v, from, parent);
      }
    }
  }
}

export function ok(ex: Exchange | undefined): boolean {
  const s = ex?.response?.status;
  return s !== undefined && s >= 200 && s < 300;
}

/** The id a creator's answer gives: the item parameter's name, `id` or an `…_id` of the collection, at the top or under `data`; else the request's own field (a profile's name). */
export function extractId(c: Collection, built: BuiltRequest, res: HttpResponse): string | undefined {
  const wanted = [normalizeName(c.param), 'id', ...c.keys];
  const body = res.json as Record<string, unknown> | undefined;
  const places = [body?.data, body].filter((x): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x));
  for (const name of wanted) {
    for (const place of places) {
      for (const [k, v] of Object.entries(place)) {
        if (normalizeName(k) === name && (typeof v === 'string' || typeof v === 'number')) return String(v);
      }
    }
  }
  const sent = built.body?.value as Record<string, unknown> | undefined;
  if (sent && typeof sent === 'object' && typeof sent[c.param] === 'string') return sent[c.param] as string;
  return undefined;
}
