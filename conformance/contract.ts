// The contract as the suite sees it: every operation of openapi.yaml with its parameters,
// body and responses resolved, the resource collections the paths imply (who creates,
// reads and deletes them), and Ajv validators compiled from it.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { ValidateFunction } from 'ajv';
import { compileSchema, createAjv, deref as derefIn, describeErrors, type JsonObject } from '../server/http/spec.js';

export type { JsonObject };

export const METHODS = ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'] as const;
export type Method = (typeof METHODS)[number];

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: JsonObject;
  /** The parameter's own example (or first of its examples), when it documents one. */
  example?: unknown;
  hasExample: boolean;
  style?: string;
  explode?: boolean;
}

export interface Operation {
  /** operationId, or "METHOD path" when the operation has none. */
  id: string;
  method: Method;
  path: string;
  raw: JsonObject;
  params: Param[];
  requestBody?: { required: boolean; content: Record<string, JsonObject> };
  /** Status key ("200", "4XX", "default") → response object, refs resolved. */
  responses: Record<string, JsonObject>;
  /** The security requirements in force (the operation's own, else the document's). */
  security: JsonObject[];
  /** Whether a request without credentials must be refused. */
  secured: boolean;
}

/**
 * A collection the paths imply: `/v1/webhooks` when some path continues with
 * `/v1/webhooks/{id}`. Its creator is a POST on the collection path itself.
 */
export interface Collection {
  path: string;
  /** The parameter names used for its items, e.g. session_id and sessionId. */
  params: string[];
  /** The item path that has a GET or DELETE, else the first item path seen. */
  itemPath: string;
  /** The item path's parameter name. */
  param: string;
  /** Normalized names that refer to its ids in other places: sessionid, batchid, … */
  keys: string[];
  /** POST on the collection path, when an item path has a GET or DELETE (a POST with no items to address, like an async job's start, creates nothing the suite can use). */
  creator?: Operation;
  getter?: Operation;
  deleter?: Operation;
}

export const defaultSpecFile = fileURLToPath(new URL('../generated/openapi.json', import.meta.url));
export const defaultYamlFile = fileURLToPath(new URL('../openapi.yaml', import.meta.url));

/** Lower case, letters and digits only: session_id, sessionId and session-id are one name. */
export function normalizeName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

export function singular(word: string): string {
  if (/ies$/.test(word)) return word.slice(0, -3) + 'y';
  if (/(ss|us)$/.test(word)) return word;
  if (/s$/.test(word)) return word.slice(0, -1);
  return word;
}

/** Names too generic to say which collection an id belongs to. */
const GENERIC_NAMES = new Set(['id', 'name', 'key', 'version', 'uuid']);

/** The tag of the operator's admin API (`/admin/v1`). */
export const ADMIN_TAG = 'Admin';

export class Contract {
  readonly operations: Operation[] = [];
  readonly paths: string[];
  readonly collections = new Map<string, Collection>();
  private ajv?: Ajv2020;
  private coercingAjv?: Ajv2020;
  private validators = new WeakMap<object, ValidateFunction>();

  /**
   * The operator's admin API (tag Admin): kept apart from `operations` and `paths`, which the
   * generic rules judge with a project's key. Its own rules (rules/admin.ts) need the
   * operator's token, and run only when the suite is given one.
   */
  readonly adminOperations: Operation[] = [];

  constructor(readonly spec: JsonObject) {
    const paths: string[] = [];
    for (const path of Object.keys(spec.paths ?? {})) {
      const item = this.deref(spec.paths[path]);
      const ops = METHODS.filter((m) => item[m.toLowerCase()]).map((m) => this.readOperation(m, path, item, item[m.toLowerCase()]));
      const admin = ops.length > 0 && ops.every((op) => (op.raw.tags ?? []).includes(ADMIN_TAG));
      if (admin) this.adminOperations.push(...ops);
      else {
        paths.push(path);
        this.operations.push(...ops);
      }
    }
    this.paths = paths;
    this.readCollections();
  }

  adminOperation(id: string): Operation {
    const op = this.adminOperations.find((o) => o.id === id);
    if (!op) throw new Error(`the contract has no admin operation ${id}`);
    return op;
  }

  static fromFile(file?: string): Contract {
    const path = file ?? (existsSync(defaultSpecFile) ? defaultSpecFile : defaultYamlFile);
    const text = readFileSync(path, 'utf8');
    const spec = /\.ya?ml$/i.test(path) ? parseYaml(text) : JSON.parse(text);
    if (!spec || typeof spec !== 'object' || !spec.paths) throw new Error(`${path} is not an OpenAPI document with paths`);
    return new Contract(spec);
  }

  deref<T = JsonObject>(node: JsonObject): T {
    return derefIn(this.spec, node) as T;
  }

  operation(id: string): Operation {
    const op = this.operations.find((o) => o.id === id);
    if (!op) throw new Error(`the contract has no operation ${id}`);
    return op;
  }

  find(method: string, path: string): Operation | undefined {
    return this.operations.find((o) => o.method === method.toUpperCase() && o.path === path);
  }

  methodsAt(path: string): Method[] {
    return this.operations.filter((o) => o.path === path).map((o) => o.method);
  }

  /**
   * The collection whose items a path parameter names: the collection at the path prefix
   * before the parameter when it has a creator, else any collection with a creator that
   * the parameter's name refers to (taskId in /v2/tasks/{taskId}/run → /v1/task).
   */
  collectionFor(path: string, param: string): Collection | undefined {
    const segments = path.split('/');
    const at = segments.indexOf(`{${param}}`);
    if (at < 0) return undefined;
    const own = this.collections.get(segments.slice(0, at).join('/'));
    if (own?.creator) return own;
    return this.collectionForKey(param) ?? own;
  }

  /** The collection with a creator that a field or parameter name (session_id, batchId) refers to. */
  collectionForKey(name: string): Collection | undefined {
    const key = normalizeName(name);
    if (GENERIC_NAMES.has(key)) return undefined;
    for (const c of this.collections.values()) if (c.creator && c.keys.includes(key)) return c;
    return undefined;
  }

  /** The collection an operation creates items of, when it is a creator. */
  createdBy(op: Operation): Collection | undefined {
    for (const c of this.collections.values()) if (c.creator === op) return c;
    return undefined;
  }

  /** The documented response for a status: exact, then its range (4XX), then default. */
  response(op: Operation, status: number): { key: string; response: JsonObject } | undefined {
    const exact = String(status);
    const range = `${exact[0]}XX`;
    for (const key of [exact, range, range.toLowerCase(), 'default']) {
      if (op.responses[key]) return { key, response: op.responses[key] };
    }
    return undefined;
  }

  /** Compiles (once per schema object) a schema taken from the contract. */
  validator(schema: JsonObject, options: { coerce?: boolean } = {}): ValidateFunction {
    const cache = options.coerce ? undefined : this.validators.get(schema);
    if (cache) return cache;
    let ajv: Ajv2020;
    if (options.coerce) ajv = this.coercingAjv ??= createAjv(this.spec, { coerce: true });
    else ajv = this.ajv ??= createAjv(this.spec);
    const fn = compileSchema(ajv, schema);
    if (!options.coerce) this.validators.set(schema, fn);
    return fn;
  }

  /** undefined when `value` validates, else Ajv's first error, located and with its schema path. */
  validate(schema: JsonObject, value: unknown, where = 'body', options: { coerce?: boolean } = {}): string | undefined {
    let fn: ValidateFunction;
    try {
      fn = this.validator(schema, options);
    } catch (err) {
      return `the contract's schema for ${where} does not compile under strict Ajv: ${(err as Error).message}`;
    }
    if (fn(value)) return undefined;
    const e = fn.errors?.[0];
    const params = e && Object.keys(e.params ?? {}).length ? ` ${JSON.stringify(e.params)}` : '';
    return `${describeErrors(fn.errors, where)}${params}${e ? ` (schema ${e.schemaPath})` : ''}`;
  }

  /** Whether `value` validates; undefined when the schema does not compile on its own. */
  validates(schema: JsonObject, value: unknown): boolean | undefined {
    let fn: ValidateFunction;
    try {
      fn = this.validator(schema);
    } catch {
      return undefined;
    }
    return fn(value) === true;
  }

  /** The header name and place of the API key an operation takes (apiKey or bearer schemes). */
  credentialsOf(op: Operation): { in: 'header' | 'query'; name: string; bearer?: boolean }[] {
    const requirement = op.security.find((r) => Object.keys(r).length > 0);
    if (!requirement) return [];
    const schemes = this.spec.components?.securitySchemes ?? {};
    const out: { in: 'header' | 'query'; name: string; bearer?: boolean }[] = [];
    for (const name of Object.keys(requirement)) {
      const scheme = schemes[name] ? this.deref(schemes[name]) : undefined;
      if (!scheme) continue;
      if (scheme.type === 'apiKey' && (scheme.in === 'header' || scheme.in === 'query')) out.push({ in: scheme.in, name: scheme.name });
      else if (scheme.type === 'http' && String(scheme.scheme).toLowerCase() === 'bearer') out.push({ in: 'header', name: 'authorization', bearer: true });
    }
    return out;
  }

  private readOperation(method: Method, path: string, item: JsonObject, raw: JsonObject): Operation {
    const byKey = new Map<string, Param>();
    for (const p of [...(item.parameters ?? []), ...(raw.parameters ?? [])]) {
      const d = this.deref(p);
      const examples = d.examples ? Object.values<JsonObject>(d.examples).map((e) => this.deref(e)) : [];
      const hasExample = 'example' in d || examples.some((e) => 'value' in e);
      byKey.set(`${d.in}:${d.name}`, {
        name: d.name,
        in: d.in,
        required: d.in === 'path' ? true : d.required === true,
        schema: d.schema ? this.deref(d.schema) : {},
        example: 'example' in d ? d.example : examples.find((e) => 'value' in e)?.value,
        hasExample,
        style: d.style,
        explode: d.explode,
      });
    }
    const responses: Record<string, JsonObject> = {};
    for (const [status, r] of Object.entries<JsonObject>(raw.responses ?? {})) responses[status] = this.deref(r);
    const rb = raw.requestBody ? this.deref(raw.requestBody) : undefined;
    const security: JsonObject[] = raw.security ?? this.spec.security ?? [];
    return {
      id: raw.operationId ?? `${method} ${path}`,
      method,
      path,
      raw,
      params: [...byKey.values()],
      requestBody: rb ? { required: rb.required === true, content: rb.content ?? {} } : undefined,
      responses,
      security,
      // An empty requirement ({}) makes credentials optional.
      secured: security.length > 0 && !security.some((r) => Object.keys(r).length === 0),
    };
  }

  private readCollections() {
    for (const path of this.paths) {
      const segments = path.split('/');
      segments.forEach((segment, i) => {
        const m = /^\{(.+)\}$/.exec(segment);
        if (!m || i === 0) return;
        const prefix = segments.slice(0, i).join('/');
        const param = m[1];
        let c = this.collections.get(prefix);
        if (!c) {
          const last = segments[i - 1].startsWith('{') ? 'item' : segments[i - 1];
          c = { path: prefix, params: [], itemPath: `${prefix}/{${param}}`, param, keys: [normalizeName(singular(last)) + 'id'] };
          this.collections.set(prefix, c);
        }
        if (!c.params.includes(param)) c.params.push(param);
        const key = normalizeName(param);
        if (!GENERIC_NAMES.has(key) && !c.keys.includes(key)) c.keys.push(key);
      });
    }
    for (const c of this.collections.values()) {
      for (const param of c.params) {
        const itemPath = `${c.path}/{${param}}`;
        const getter = this.find('GET', itemPath);
        const deleter = this.find('DELETE', itemPath);
        if (getter || deleter) {
          c.itemPath = itemPath;
          c.param = param;
          c.getter = getter;
          c.deleter = deleter;
          break;
        }
      }
      if (c.getter || c.deleter) c.creator = this.find('POST', c.path);
    }
  }
}
