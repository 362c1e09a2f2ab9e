// Builds a valid request for any operation from the contract alone: path parameters
// (ids given by the caller, else a value that fits the schema), query parameters (required
// ones, and optional ones that document an example or a default), and the request body
// (the media type's example, else one synthesized from the schema; multipart bodies as
// form fields with a small file).
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Contract, JsonObject, Operation, Param } from './contract.js';
import type { HttpRequest } from './http.js';
import { isJsonMediaType } from './http.js';

export interface FilePart {
  file: true;
  filename: string;
  type: string;
  bytes: Uint8Array;
}

export interface BuiltBody {
  mediaType: string;
  /** JSON: the value; multipart or urlencoded: field → value; anything else: text. */
  value: unknown;
}

export interface BuiltRequest {
  op: Operation;
  pathParams: Record<string, string>;
  query: [string, string][];
  headers: Record<string, string>;
  body?: BuiltBody;
}

export interface BuildOptions {
  /** Values for path parameters by name; the others are synthesized. */
  pathParams?: Record<string, string>;
  /** Random values for synthesized path parameters (a fresh uuid for a uuid format…). Default true. */
  randomIds?: boolean;
  /**
   * 'example' (default): the media type's example, else synthesized. 'minimal': only the
   * required fields, synthesized (for a server that refuses what the example asks for).
   */
  body?: 'example' | 'minimal';
}

// ---------------------------------------------------------------------------------------
// Values from schemas

export interface SynthOptions {
  /** Random strings and numbers (within the schema) rather than fixed ones. */
  random?: boolean;
  /** Distinguishes items of an array whose items must be unique. */
  variant?: number;
  /** Include optional properties too (used sparingly: they may switch features on). */
  optional?: boolean;
  /** Ignore the example and default of the schema itself (not of its parts). */
  ignoreOwnExample?: boolean;
}

const MAX_DEPTH = 8;

/** A value that satisfies the schema as far as the synthesizer understands it. */
export function synthesize(contract: Contract, schema: JsonObject | boolean | undefined, options: SynthOptions = {}, depth = 0): unknown {
  if (schema === undefined || schema === true) return 'conformance';
  if (schema === false) return undefined;
  const s = contract.deref(schema);
  if (depth > MAX_DEPTH) return null;
  if ('const' in s) return s.const;
  const own = options.ignoreOwnExample && depth === 0;
  if (!options.random && !own) {
    if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
    if ('example' in s) return s.example;
    if ('default' in s) return s.default;
  }
  if (Array.isArray(s.enum) && s.enum.length) return s.enum.find((v: unknown) => v !== null) ?? s.enum[0];
  if (Array.isArray(s.allOf)) {
    const parts = s.allOf.map((p: JsonObject) => synthesize(contract, p, options, depth + 1));
    const own = s.properties || s.required ? synthesize(contract, { ...s, allOf: undefined }, options, depth + 1) : undefined;
    if (parts.every((p: unknown) => p && typeof p === 'object' && !Array.isArray(p))) return Object.assign({}, ...parts, own ?? {});
    return parts[0];
  }
  for (const key of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(s[key]) && s[key].length) {
      const branch = s[key].find((b: JsonObject) => contract.deref(b).type !== 'null') ?? s[key][0];
      const merged = s.properties || s.required ? { ...s, [key]: undefined } : undefined;
      const value = synthesize(contract, branch, options, depth + 1);
      if (merged && value && typeof value === 'object' && !Array.isArray(value)) {
        return { ...(synthesize(contract, merged, options, depth + 1) as object), ...value };
      }
      return value;
    }
  }
  let type = s.type;
  if (Array.isArray(type)) type = type.find((t: string) => t !== 'null') ?? type[0];
  if (!type) type = s.properties || s.required || s.additionalProperties ? 'object' : s.items || s.prefixItems ? 'array' : 'string';
  switch (type) {
    case 'object': {
      const value = synthObject(contract, s, options, depth);
      // if/then/else: when the value meets `if`, it must meet `then` too (and else `else`).
      if (s.if && (s.then || s.else)) {
        // (typed here: strict Ajv wants a type beside `properties` in a schema of its own)
        const condition = { type: 'object', ...contract.deref(s.if) };
        const branch = contract.validate(condition, value) === undefined ? s.then : s.else;
        if (branch) {
          const b = contract.deref(branch);
          const merged = {
            ...s,
            ...b,
            if: undefined,
            then: undefined,
            else: undefined,
            properties: { ...(s.properties ?? {}), ...(b.properties ?? {}) },
            required: [...new Set([...(s.required ?? []), ...(b.required ?? [])])],
          };
          return synthObject(contract, merged, options, depth);
        }
      }
      return value;
    }
    case 'array':
      return synthArray(contract, s, options, depth);
    case 'integer':
    case 'number':
      return synthNumber(s, type, options);
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return synthString(s, options);
  }
}

function synthObject(contract: Contract, s: JsonObject, options: SynthOptions, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const props: Record<string, JsonObject> = s.properties ?? {};
  const required: string[] = s.required ?? [];
  const names = options.optional ? [...new Set([...required, ...Object.keys(props)])] : required;
  for (const name of names) {
    const value = synthesize(
      contract,
      props[name] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined),
      { ...options, variant: undefined },
      depth + 1,
    );
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function synthArray(contract: Contract, s: JsonObject, options: SynthOptions, depth: number): unknown[] {
  const min = s.minItems ?? 0;
  const max = s.maxItems ?? Infinity;
  const n = Math.min(Math.max(min, 1), max);
  const out: unknown[] = [];
  const prefix: JsonObject[] = s.prefixItems ?? [];
  for (let i = 0; i < n; i++) {
    const itemSchema = prefix[i] ?? s.items;
    out.push(synthesize(contract, itemSchema, { ...options, variant: s.uniqueItems ? i : options.variant }, depth + 1));
  }
  return out;
}

function synthNumber(s: JsonObject, type: 'integer' | 'number', options: SynthOptions): number {
  let lo = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + (type === 'integer' ? 1 : 0.5) : undefined;
  let hi = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - (type === 'integer' ? 1 : 0.5) : undefined;
  let value: number;
  if (options.random) {
    const a = lo ?? 1;
    const b = hi ?? a + 1000;
    value = type === 'integer' ? randomInt(Math.ceil(a), Math.floor(b) + 1) : a + Math.random() * (b - a);
  } else {
    value = lo ?? (hi !== undefined && hi < 1 ? hi : 1);
  }
  if (typeof s.multipleOf === 'number' && s.multipleOf > 0) value = Math.ceil(value / s.multipleOf) * s.multipleOf;
  if (type === 'integer') value = Math.round(value);
  if (options.variant) value += options.variant * (s.multipleOf ?? 1);
  if (hi !== undefined && value > hi) value = hi;
  if (lo !== undefined && value < lo) value = lo;
  return value;
}

const FORMATS: Record<string, (random: boolean) => string> = {
  uuid: () => randomUUID(),
  'date-time': () => new Date().toISOString(),
  date: () => new Date().toISOString().slice(0, 10),
  time: () => new Date().toISOString().slice(11, 19) + 'Z',
  email: () => 'conformance@example.com',
  'idn-email': () => 'conformance@example.com',
  uri: () => 'https://example.com/',
  url: () => 'https://example.com/',
  iri: () => 'https://example.com/',
  'uri-reference': () => 'https://example.com/',
  hostname: () => 'example.com',
  ipv4: () => '192.0.2.1',
  ipv6: () => '2001:db8::1',
  byte: () => 'Y29uZm9ybWFuY2U=',
  binary: () => 'conformance',
  password: () => 'conformance-password',
  duration: () => 'PT1M',
};

/** Tried in turn against a pattern; the first that fits wins. */
const PATTERN_CANDIDATES = [
  'conformance',
  'Y29uZm9ybWFuY2U=',
  'a',
  'A',
  '1',
  'ab',
  'AB',
  'a1',
  'us',
  'US',
  'en',
  'en-US',
  'x_1',
  'abc-123',
  'conformance-1',
  '2026-01-01',
  '2026-01-01T00:00:00Z',
  'https://example.com/',
  'https://example.com',
  'example.com',
  'conformance@example.com',
  'sk_conformance',
  'evt_conformance',
  'wh_conformance',
  '00000000-0000-4000-8000-000000000000',
  '0',
  '10',
];

function synthString(s: JsonObject, options: SynthOptions): string {
  const suffix = options.variant ? `-${options.variant}` : '';
  const format = typeof s.format === 'string' ? FORMATS[s.format] : undefined;
  if (format) return format(!!options.random) + (s.format === 'uuid' ? '' : suffix);
  if (typeof s.pattern === 'string') {
    let re: RegExp | undefined;
    try {
      re = new RegExp(s.pattern, 'u');
    } catch {
      re = undefined;
    }
    if (re) {
      const candidates = options.random ? [`conformance${randomBytes(4).toString('hex')}`, ...PATTERN_CANDIDATES] : PATTERN_CANDIDATES;
      const fits = (c: string) => re!.test(c) && fitsLength(s, c);
      const found = candidates.map((c) => c + suffix).find(fits) ?? candidates.find(fits);
      if (found !== undefined) return found;
    }
  }
  let value = (options.random ? `conformance-${randomBytes(4).toString('hex')}` : 'conformance') + suffix;
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? Infinity;
  if (value.length < min) value = value.padEnd(min, 'x');
  if (value.length > max) value = value.slice(0, max);
  return value;
}

function fitsLength(s: JsonObject, v: string): boolean {
  return v.length >= (s.minLength ?? 0) && v.length <= (s.maxLength ?? Infinity);
}

// ---------------------------------------------------------------------------------------
// Parameters

/** A value for a path parameter: enum, then example, then default, then a (random) synthesized one. */
export function pathParamValue(contract: Contract, p: Param, random = true): string {
  const s = p.schema ?? {};
  let value: unknown;
  if (Array.isArray(s.enum) && s.enum.length) value = s.enum[0];
  else if (p.hasExample) value = p.example;
  else if (Array.isArray(s.examples) && s.examples.length) value = s.examples[0];
  else if ('example' in s) value = s.example;
  else if ('default' in s) value = s.default;
  else value = synthesize(contract, s, { random });
  return paramText(value);
}

function paramText(value: unknown): string {
  if (Array.isArray(value)) return value.map(paramText).join(',');
  if (value && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Query values: required parameters always, optional ones when they document an example or a default. */
export function queryEntries(contract: Contract, op: Operation): [string, string][] {
  const out: [string, string][] = [];
  for (const p of op.params.filter((x) => x.in === 'query')) {
    const s = p.schema ?? {};
    const documented = p.hasExample || 'example' in s || (Array.isArray(s.examples) && s.examples.length > 0) || 'default' in s;
    if (!p.required && !documented) continue;
    const value = p.hasExample ? p.example : synthesize(contract, s);
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      if (p.explode === false) out.push([p.name, value.map(paramText).join(',')]);
      else for (const v of value) out.push([p.name, paramText(v)]);
    } else if (typeof value === 'object' && p.style === 'deepObject') {
      for (const [k, v] of Object.entries(value)) out.push([`${p.name}[${k}]`, paramText(v)]);
    } else {
      out.push([p.name, paramText(value)]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Bodies

/** Preference when an operation accepts several media types. */
function pickMediaType(content: Record<string, JsonObject>): string | undefined {
  const types = Object.keys(content);
  return (
    types.find((t) => isJsonMediaType(t.split(';')[0].trim())) ??
    types.find((t) => t.startsWith('multipart/form-data')) ??
    types.find((t) => t.startsWith('application/x-www-form-urlencoded')) ??
    types[0]
  );
}

/** The media type's example, else the first of its examples, else one synthesized from its schema. */
export function exampleBody(contract: Contract, media: JsonObject, minimal = false): unknown {
  if (minimal) return synthesize(contract, media.schema, { ignoreOwnExample: true });
  if ('example' in media) return structuredClone(media.example);
  if (media.examples && typeof media.examples === 'object') {
    for (const e of Object.values<JsonObject>(media.examples)) {
      const d = contract.deref(e);
      if ('value' in d) return structuredClone(d.value);
    }
  }
  return synthesize(contract, media.schema);
}

/** Whether the operation's body comes from an example, so a minimal one would differ. */
export function bodyHasExample(contract: Contract, op: Operation): boolean {
  const mediaType = op.requestBody ? pickMediaType(op.requestBody.content) : undefined;
  const media = mediaType ? op.requestBody!.content[mediaType] : undefined;
  if (!media) return false;
  const schema = media.schema ? contract.deref(media.schema) : {};
  return 'example' in media || !!media.examples || 'example' in schema || Array.isArray(schema.examples);
}

export function buildBody(contract: Contract, op: Operation, minimal = false): BuiltBody | undefined {
  if (!op.requestBody) return undefined;
  const mediaType = pickMediaType(op.requestBody.content);
  if (!mediaType) return undefined;
  const media = op.requestBody.content[mediaType];
  const type = mediaType.split(';')[0].trim().toLowerCase();
  if (type === 'multipart/form-data' || type === 'application/x-www-form-urlencoded') {
    return { mediaType: type, value: formFields(contract, media, type === 'multipart/form-data', minimal) };
  }
  return { mediaType: type, value: exampleBody(contract, media, minimal) };
}

function isBinarySchema(s: JsonObject): boolean {
  return s.format === 'binary' || s.format === 'byte' || typeof s.contentMediaType === 'string' || typeof s.contentEncoding === 'string';
}

/** Form fields: the example's (or synthesized) values, a small file for each binary field. */
function formFields(contract: Contract, media: JsonObject, multipart: boolean, minimal: boolean): Record<string, unknown> {
  const schema = media.schema ? contract.deref(media.schema) : {};
  const props: Record<string, JsonObject> = schema.properties ?? {};
  const example = exampleBody(contract, media, minimal);
  const fields: Record<string, unknown> = example && typeof example === 'object' && !Array.isArray(example) ? { ...(example as object) } : {};
  for (const name of schema.required ?? []) if (!(name in fields)) fields[name] = synthesize(contract, props[name]);
  if (multipart) {
    for (const [name, raw] of Object.entries(props)) {
      const p = contract.deref(raw);
      if (!(name in fields) || !isBinarySchema(p)) continue;
      const types: string[] = (media.encoding?.[name]?.contentType ?? p.contentMediaType ?? 'application/octet-stream').split(',').map((t: string) => t.trim());
      const type = types.find((t) => /zip|pem/.test(t)) ?? types[0];
      fields[name] = smallFile(type);
    }
  }
  return fields;
}

/** A ZIP holding a minimal extension manifest when a ZIP is asked for, else a few bytes. */
export function smallFile(type: string): FilePart {
  if (/zip/.test(type)) {
    const manifest = {
      manifest_version: 3,
      name: 'Conformance',
      version: '1.0.0',
      description: 'Uploaded by the conformance suite',
      permissions: [],
    };
    return { file: true, filename: 'conformance.zip', type, bytes: zip({ 'manifest.json': JSON.stringify(manifest, null, 2) }) };
  }
  if (/pem|x-x509|pkcs/.test(type))
    return {
      file: true,
      filename: 'conformance.pem',
      type,
      bytes: new TextEncoder().encode('-----BEGIN CERTIFICATE-----\nY29uZm9ybWFuY2U=\n-----END CERTIFICATE-----\n'),
    };
  return { file: true, filename: 'conformance.bin', type, bytes: new TextEncoder().encode('conformance\n') };
}

// A stored (uncompressed) ZIP: local headers, central directory, end record.
export function zip(files: Record<string, string>): Uint8Array {
  const enc = new TextEncoder();
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const data = Buffer.from(enc.encode(text));
    const fname = Buffer.from(enc.encode(name));
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(fname.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(fname.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, fname, data);
    centrals.push(central, fname);
    offset += local.length + fname.length + data.length;
  }
  const dir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(files).length, 8);
  end.writeUInt16LE(Object.keys(files).length, 10);
  end.writeUInt32LE(dir.length, 12);
  end.writeUInt32LE(offset, 16);
  return new Uint8Array(Buffer.concat([...locals, dir, end]));
}

function crc32(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

// ---------------------------------------------------------------------------------------
// Whole requests

export function buildRequest(contract: Contract, op: Operation, options: BuildOptions = {}): BuiltRequest {
  const pathParams: Record<string, string> = {};
  for (const p of op.params.filter((x) => x.in === 'path')) {
    pathParams[p.name] = options.pathParams?.[p.name] ?? pathParamValue(contract, p, options.randomIds ?? true);
  }
  const headers: Record<string, string> = {};
  for (const p of op.params.filter((x) => x.in === 'header' && x.required)) {
    headers[p.name] = paramText(p.hasExample ? p.example : synthesize(contract, p.schema));
  }
  return { op, pathParams, query: queryEntries(contract, op), headers, body: buildBody(contract, op, options.body === 'minimal') };
}

export function fillPath(path: string, params: Record<string, string>): string {
  return path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? `{${name}}`));
}

export interface Credentials {
  in: 'header' | 'query';
  name: string;
  bearer?: boolean;
}

export interface RenderOptions {
  /** The API key to send in the operation's credentials; none when undefined. */
  apiKey?: string;
  credentials?: Credentials[];
  timeoutMs: number;
  /** Sends this text with this Content-Type instead of the built body. */
  rawBody?: { contentType: string; text: string };
  /** Replaces the built body's value (same media type). */
  bodyValue?: unknown;
}

/** The HTTP request a built request stands for, against a base URL. */
export function render(baseUrl: string, req: BuiltRequest, options: RenderOptions): HttpRequest {
  const url = new URL(baseUrl.replace(/\/+$/, '') + fillPath(req.op.path, req.pathParams));
  for (const [k, v] of req.query) url.searchParams.append(k, v);
  const headers: Record<string, string> = { accept: '*/*', ...req.headers };
  if (options.apiKey !== undefined) {
    for (const c of options.credentials ?? []) {
      if (c.in === 'query') url.searchParams.set(c.name, options.apiKey);
      else headers[c.name] = c.bearer ? `Bearer ${options.apiKey}` : options.apiKey;
    }
  }
  let body: HttpRequest['body'];
  if (options.rawBody) {
    headers['content-type'] = options.rawBody.contentType;
    body = options.rawBody.text;
  } else if (req.body) {
    const value = 'bodyValue' in options ? options.bodyValue : req.body.value;
    const type = req.body.mediaType;
    if (type === 'multipart/form-data') {
      body = toFormData(value as Record<string, unknown>);
    } else if (type === 'application/x-www-form-urlencoded') {
      headers['content-type'] = type;
      body = new URLSearchParams(Object.entries((value ?? {}) as Record<string, unknown>).map(([k, v]) => [k, String(v)])).toString();
    } else if (isJsonMediaType(type)) {
      headers['content-type'] = type;
      body = JSON.stringify(value);
    } else {
      headers['content-type'] = type;
      body = value instanceof Uint8Array ? value : typeof value === 'string' ? value : JSON.stringify(value);
    }
  }
  return { method: req.op.method, url: url.toString(), headers, body, timeoutMs: options.timeoutMs };
}

export function isFilePart(v: unknown): v is FilePart {
  return !!v && typeof v === 'object' && (v as FilePart).file === true && (v as FilePart).bytes instanceof Uint8Array;
}

export function toFormData(fields: Record<string, unknown>): FormData {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields ?? {})) {
    if (value === undefined || value === null) continue;
    if (isFilePart(value)) form.append(name, new Blob([value.bytes as BlobPart], { type: value.type }), value.filename);
    else if (Array.isArray(value)) for (const v of value) form.append(name, typeof v === 'object' ? JSON.stringify(v) : String(v));
    else form.append(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  return form;
}
