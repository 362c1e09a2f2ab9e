// The boundary values of an operation's request schema, for G13: each field of the body, the
// query and the path taken to the edges the contract draws (minimum and maximum, one past
// them, empty and longest strings, every enum value, arrays empty and full, optional fields
// left out), and the request's body as a whole (empty, none, every optional field). A value
// the contract accepts (`valid`) must be served or refused with a 4xx; one it forbids, refused
// with a 4xx; neither may be a 5xx. Values that only the page knows to be out of range (a PDF
// page past the last, a coordinate past the viewport, an index past the count) come from the
// same edges: an unbounded number is taken to 2^31 and 2^53, a number inside a pattern to 20
// and 400 digits.
import type { Contract, JsonObject, Operation } from './contract.js';
import { synthesize } from './requests.js';

export type Place = 'body' | 'query' | 'path';

export interface Variation {
  place: Place;
  /** The field's path: a parameter's name, or keys and indexes into the body. */
  at: (string | number)[];
  /** The value; undefined leaves the field out. */
  value: unknown;
  /** Parents to fill first when the base request lacks them (an optional object). */
  parents: { at: (string | number)[]; value: unknown; replace: boolean }[];
}

export interface BoundaryCase {
  what: string;
  /** The contract accepts it: served, or refused with a 4xx. Otherwise it must be refused with a 4xx. */
  valid: boolean;
  /** Lower runs first when an operation has more valid cases than its budget. */
  rank: number;
  variation?: Variation;
  /** The whole body: JSON text, none (null), or a value. */
  body?: { text: string | null } | { value: unknown };
}

const MAX_DEPTH = 5;
const LONGEST = 1_000_000;
/** Time-like fields: their in-range maximum would hold the request that long. */
const TIME_LIKE = /time|wait|delay|hold|duration|ms$|seconds/i;
/** Quantities of things to create: their maximum asks for thousands of browsers. */
const QUANTITY = /^(count|quantity)$/i;

export interface BoundaryOptions {
  /** An address of a page the server can load (the fixture server's), for URL fields. */
  pageUrl: string;
}

/** Every boundary case of the operation, valid first by rank. `base` is a valid request's body. */
export function boundaryCases(contract: Contract, op: Operation, baseBody: unknown, options: BoundaryOptions): BoundaryCase[] {
  const media = jsonMedia(op);
  const cases: BoundaryCase[] = [];
  const gen = new Generator(contract, options);
  for (const p of op.params) {
    if (p.in !== 'query' && p.in !== 'path') continue;
    const s = p.schema ? contract.deref(p.schema) : {};
    for (const c of gen.leaf(s, p.name, undefined, !p.required && p.in === 'query', p.hasExample ? p.example : undefined)) {
      // A path parameter cannot be left out or empty: that is another route. An empty array in
      // a query is no parameter at all: the case "left out" already.
      if (p.in === 'path' && (c.value === undefined || c.value === '')) continue;
      if (Array.isArray(c.value) && c.value.length === 0) continue;
      cases.push({ ...c, what: `${p.in} ${p.name} ${c.what}`, variation: { place: p.in, at: [p.name], value: c.value, parents: [] } });
    }
  }
  if (media) {
    const schema = media.schema ? contract.deref(media.schema) : {};
    const required = op.requestBody?.required ?? false;
    // Without its fields, a body whose default is a long wait (waitForEvent: 60 s) would hold the
    // run that long: those cases are left out when the contract accepts them.
    const waits = Object.entries<JsonObject>(schema.properties ?? {}).some(([k, p]) => longWait(k, contract.deref(p)));
    const whole: BoundaryCase[] = [
      { what: 'no body', valid: !required, rank: 0, body: { text: null } },
      { what: 'an empty body', valid: !required, rank: 0, body: { text: '' } },
      { what: 'body {}', valid: contract.validates(schema, {}) === true, rank: 0, body: { value: {} } },
    ];
    cases.push(...whole.filter((c) => !(waits && c.valid)));
    const full = prepareBase(contract, schema, synthesize(contract, schema, { optional: true, ignoreOwnExample: true }), options.pageUrl);
    cases.push({ what: 'every optional field', valid: contract.validates(schema, full) === true, rank: 0, body: { value: full } });
    gen.walk(schema, baseBody, exampleOf(contract, media), [], [], cases, 0);
  }
  return cases;
}

/** The JSON media type of the operation's body, if it takes one. */
export function jsonMedia(op: Operation): JsonObject | undefined {
  const content = op.requestBody?.content ?? {};
  const key = Object.keys(content).find((k) => /json/i.test(k.split(';')[0]));
  return key ? content[key] : undefined;
}

interface LeafCase {
  what: string;
  value: unknown;
  valid: boolean;
  rank: number;
}

class Generator {
  constructor(
    private readonly contract: Contract,
    private readonly options: BoundaryOptions,
  ) {}

  /** The body's fields, depth first: each leaf's edges, each object's and array's parts. */
  walk(schema: JsonObject, value: unknown, example: unknown, at: (string | number)[], parents: Variation['parents'], out: BoundaryCase[], depth: number): void {
    if (depth > MAX_DEPTH) return;
    const s = this.contract.deref(schema);
    const object = asObject(value);
    const required: string[] = s.required ?? [];
    for (const [name, raw] of Object.entries<JsonObject>(s.properties ?? {})) {
      const ps = this.contract.deref(raw);
      const here = [...at, name];
      const current = object[name];
      const label = here.join('.');
      const seen = asObject(example)[name];
      for (const c of this.leaf(ps, name, current, !required.includes(name), seen)) {
        out.push({ ...c, what: `${label} ${c.what}`, variation: { place: 'body', at: here, value: c.value, parents } });
      }
      this.descend(ps, current, seen, here, parents, out, depth);
    }
  }

  /** Into an object field (its own fields), an array's first item, a union's every branch. */
  private descend(
    ps: JsonObject,
    current: unknown,
    example: unknown,
    here: (string | number)[],
    parents: Variation['parents'],
    out: BoundaryCase[],
    depth: number,
  ): void {
    const branches: JsonObject[] = [...(ps.oneOf ?? []), ...(ps.anyOf ?? [])].map((b: JsonObject) => this.contract.deref(b));
    if (ps.properties) {
      const filled = current ?? synthesize(this.contract, ps, { ignoreOwnExample: true });
      this.walk(ps, filled, example, here, current === undefined ? [...parents, { at: here, value: filled, replace: false }] : parents, out, depth + 1);
    }
    for (const b of branches.filter((b) => b.properties)) {
      const filled = synthesize(this.contract, b, { ignoreOwnExample: true });
      this.walk(b, filled, example, here, [...parents, { at: here, value: filled, replace: true }], out, depth + 1);
    }
    const items = ps.items ? this.contract.deref(ps.items) : undefined;
    if (items?.properties || items?.oneOf || items?.anyOf) {
      const list = Array.isArray(current) && current.length ? current : [synthesize(this.contract, items, { ignoreOwnExample: true })];
      const withList = Array.isArray(current) && current.length ? parents : [...parents, { at: here, value: list, replace: true }];
      this.descend(items, list[0], Array.isArray(example) ? example[0] : undefined, [...here, 0], withList, out, depth + 1);
    }
  }

  /** A field's edges: the values the contract accepts there and those just past them. */
  leaf(s: JsonObject, name: string, current: unknown, optional: boolean, example?: unknown): LeafCase[] {
    const out: LeafCase[] = [];
    const ok = (v: unknown) => this.contract.validates(s, v) === true;
    const add = (what: string, value: unknown, rank: number, valid = ok(value)) => {
      if (value === current && valid) return;
      if (out.some((c) => c.value === value || (typeof value === 'object' && JSON.stringify(c.value) === JSON.stringify(value)))) return;
      out.push({ what, value, valid, rank });
    };
    // Left out, unless its default is a long wait.
    if (optional && current !== undefined && !longWait(name, s)) add('left out', undefined, 3, true);
    let type = s.type;
    if (Array.isArray(type)) type = type.find((t: string) => t !== 'null') ?? type[0];
    if (Array.isArray(s.enum)) {
      for (const v of s.enum) add(`= ${show(v)}`, v, 2);
      if (s.enum.every((v: unknown) => typeof v === 'string')) add('= a value not in its enum', 'conformance-not-in-enum', 1, false);
      return out;
    }
    if (type === 'integer' || type === 'number') this.numbers(s, name, type, add);
    else if (type === 'string') this.strings(s, current, example, add);
    else if (type === 'array') this.arrays(s, name, add);
    else if (type === 'boolean') add(`= ${!(current ?? s.default ?? false)}`, !(current ?? s.default ?? false), 4);
    return out;
  }

  private numbers(s: JsonObject, name: string, type: 'integer' | 'number', add: (what: string, v: unknown, rank: number, valid?: boolean) => void): void {
    const step = type === 'integer' ? 1 : 0.01;
    const lo = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + step : undefined;
    const hi = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - step : undefined;
    if (lo !== undefined) add(`= its minimum ${lo}`, lo, 1);
    const waits = TIME_LIKE.test(name) && hi !== undefined && hi > 3000;
    if (hi !== undefined && !waits && !QUANTITY.test(name)) add(`= its maximum ${hi}`, hi, 1);
    if (hi === undefined) {
      add('= 2^31 - 1', 2 ** 31 - 1, 1);
      add('= 2^31', 2 ** 31, 1);
      add('= 2^53 - 1', Number.MAX_SAFE_INTEGER, 1);
    }
    if (lo === undefined) add('= -2^31', -(2 ** 31), 1);
    add('= 0', 0, 1);
    if (lo !== undefined) add(`= ${lo - step}, under its minimum`, lo - step, 1, false);
    if (hi !== undefined) add(`= ${hi + step}, over its maximum`, hi + step, 1, false);
    if (type === 'integer') add('= a fraction', (lo ?? 0) + 0.5, 1, false);
  }

  private strings(s: JsonObject, current: unknown, example: unknown, add: (what: string, v: unknown, rank: number, valid?: boolean) => void): void {
    const min: number = s.minLength ?? 0;
    const max: number | undefined = s.maxLength;
    // The contract's example of the field shows its shape best ('1cm' where the default is '0').
    const seeds = [example, current, s.example, ...(s.examples ?? []), synthesize(this.contract, s, { ignoreOwnExample: true })];
    const seed = String(seeds.find((v) => typeof v === 'string' && /\d/.test(v)) ?? seeds.find((v) => typeof v === 'string') ?? '');
    add('= ""', '', 1);
    add('= " "', ' ', 2);
    if (max !== undefined && max <= LONGEST) {
      add(`of its maximum length ${max}`, 'x'.repeat(max), 1);
      if (max <= 20_000) add(`of ${max} emoji (its maximum in characters)`, '😀'.repeat(max), 2);
      add(`one over its maximum length ${max}`, 'x'.repeat(max + 1), 1, false);
    }
    if (min > 0) add(`one under its minimum length ${min}`, 'x'.repeat(min - 1), 1, false);
    if (s.format === 'uri' || s.format === 'url') {
      const page = this.options.pageUrl;
      add('= a page of the fixture server', page, 1);
      if (max !== undefined && max > page.length + 1) add(`= a page's URL of its maximum length ${max}`, `${page}?${'a'.repeat(max - page.length - 1)}`, 1);
      for (const other of ['about:blank', 'data:text/html,<p>x</p>', 'file:///etc/passwd', 'javascript:void(0)', 'http://127.0.0.1:1/', 'ftp://127.0.0.1/'])
        add(`= ${other}`, other, 2);
    }
    if (s.format === 'uuid') {
      add('= the nil uuid', '00000000-0000-0000-0000-000000000000', 1);
      add('= the max uuid', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 1);
    }
    if (s.format === 'date-time') {
      for (const d of ['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '1970-01-01T00:00:00+14:00']) add(`= ${d}`, d, 1);
    }
    // A pattern's numbers at their edges (a page range past the last page, a version past any),
    // and its text stretched to the maximum length.
    if (s.format) return;
    if (/\d/.test(seed)) {
      for (const digits of ['0', '9'.repeat(20), '9'.repeat(400)])
        add(`with its numbers = ${digits.length > 3 ? `${digits.length} nines` : digits}`, seed.replace(/\d+/g, digits), 1);
    }
    if (max !== undefined && max <= LONGEST && seed.length) {
      add(`stretched to its maximum length ${max}`, seed + seed.slice(-1).repeat(Math.max(0, max - seed.length)), 1);
      add(`stretched one past its maximum length ${max}`, seed + seed.slice(-1).repeat(Math.max(0, max + 1 - seed.length)), 1, false);
    }
  }

  private arrays(s: JsonObject, name: string, add: (what: string, v: unknown, rank: number, valid?: boolean) => void): void {
    const min: number = s.minItems ?? 0;
    const items = s.items ? this.contract.deref(s.items) : undefined;
    const item = (i: number) => synthesize(this.contract, items, { variant: i + 1, ignoreOwnExample: true });
    add('= []', [], 1);
    const max: number | undefined = s.maxItems;
    if (max !== undefined && max <= 1000 && !QUANTITY.test(name)) {
      add(
        `of its maximum ${max} items`,
        Array.from({ length: max }, (_, i) => item(i)),
        1,
      );
      add(
        `of one item over its maximum ${max}`,
        Array.from({ length: max + 1 }, (_, i) => item(i)),
        1,
        false,
      );
    }
    if (min > 1)
      add(
        `of one item under its minimum ${min}`,
        Array.from({ length: min - 1 }, (_, i) => item(i)),
        1,
        false,
      );
    if (Array.isArray(items?.enum)) add('of every value of its enum', [...items.enum], 2);
  }
}

/** A time-like number field whose value (or, left out, its default) is a wait of seconds. */
function longWait(name: string, s: JsonObject, value?: unknown): boolean {
  const wait = typeof value === 'number' ? value : s.default;
  return TIME_LIKE.test(name) && (s.type === 'integer' || s.type === 'number') && typeof wait === 'number' && wait > 3000;
}

function asObject(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** The media type's example body, if it has one. */
function exampleOf(contract: Contract, media: JsonObject): unknown {
  if ('example' in media) return media.example;
  const first = media.examples && Object.values<JsonObject>(media.examples)[0];
  return first ? contract.deref(first).value : undefined;
}

function show(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

/** The body with the variation made: parents filled, the field set (or left out). */
export function applyToBody(body: unknown, v: Variation): unknown {
  const root = structuredClone(body ?? {}) as Record<string | number, unknown>;
  for (const p of v.parents) if (p.replace || getAt(root, p.at) === undefined) setAt(root, p.at, structuredClone(p.value));
  setAt(root, v.at, v.value);
  return root;
}

function getAt(root: unknown, at: (string | number)[]): unknown {
  let node = root as Record<string | number, unknown> | undefined;
  for (const k of at) node = node && typeof node === 'object' ? (node[k] as Record<string | number, unknown>) : undefined;
  return node;
}

function setAt(root: Record<string | number, unknown>, at: (string | number)[], value: unknown): void {
  let node = root;
  for (const k of at.slice(0, -1)) {
    if (!node[k] || typeof node[k] !== 'object') node[k] = typeof k === 'number' ? [] : {};
    node = node[k] as Record<string | number, unknown>;
  }
  const last = at[at.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
}

/**
 * The base request's body made fit for its cases: URL fields point at a page the server can
 * load, where the field allows it, and a time-like field whose default is a long wait is set to
 * its minimum (waitForEvent waits 60 s by default: every case would).
 */
export function prepareBase(contract: Contract, schema: JsonObject | undefined, value: unknown, page: string, depth = 0): unknown {
  if (!schema || depth > MAX_DEPTH) return value;
  const s = contract.deref(schema);
  if (typeof value === 'string' && (s.format === 'uri' || s.format === 'url') && contract.validates(s, page) === true) return page;
  if (Array.isArray(value) && s.items) return value.map((v) => prepareBase(contract, s.items, v, page, depth + 1));
  if (value && typeof value === 'object' && s.properties) {
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const [k, raw] of Object.entries<JsonObject>(s.properties)) {
      const p = contract.deref(raw);
      if (longWait(k, p, out[k])) out[k] = p.minimum ?? 0;
      else if (k in out) out[k] = prepareBase(contract, p, out[k], page, depth + 1);
    }
    return out;
  }
  return value;
}
