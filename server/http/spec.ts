// The contract at run time: generated/openapi.json, and Ajv 2020 validators compiled from
// it. The server validates requests with these; the conformance suite validates responses.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction, type ErrorObject } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats: AddFormats = (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

export type JsonObject = Record<string, any>;

export const specPath = fileURLToPath(new URL('../../generated/openapi.json', import.meta.url));

let cached: JsonObject | undefined;
export function loadSpec(): JsonObject {
  cached ??= JSON.parse(readFileSync(specPath, 'utf8'));
  return cached!;
}

/** Follows $refs (local JSON pointers) until it reaches an object that is not a ref. */
export function deref(spec: JsonObject, node: JsonObject): JsonObject {
  let n = node;
  while (n && typeof n.$ref === 'string') n = pointer(spec, n.$ref);
  return n;
}

export function pointer(spec: JsonObject, ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`only local refs are supported: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .reduce((acc: any, key) => acc?.[decodeURIComponent(key).replace(/~1/g, '/').replace(/~0/g, '~')], spec);
}

const SCHEMAS_ID = 'https://schemas.local/components.json';

/**
 * Ajv cannot compile into an OpenAPI document (its root has keywords Ajv rejects in strict
 * mode), so component schemas are registered as one JSON Schema resource under $defs and
 * every `#/components/schemas/X` ref is rewritten to point there.
 */
function rewriteRefs(node: any): any {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === 'object') {
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')) {
        out[k] = `${SCHEMAS_ID}#/$defs/${v.slice('#/components/schemas/'.length)}`;
      } else {
        out[k] = rewriteRefs(v);
      }
    }
    return out;
  }
  return node;
}

export interface AjvOptions {
  /** Query and path values arrive as text: coerce them to the schema's types. */
  coerce?: boolean;
}

export function createAjv(spec: JsonObject, options: AjvOptions = {}): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    strictRequired: false,
    allErrors: false,
    useDefaults: options.coerce === true,
    coerceTypes: options.coerce ? 'array' : false,
    discriminator: true,
  });
  addFormats(ajv);
  // OpenAPI's annotation keywords, and ours (x-volatile: a value that changes with time
  // alone, which conformance check G10 does not compare): meaningful to readers, not to
  // validation.
  for (const keyword of ['example', 'xml', 'externalDocs', 'x-volatile']) ajv.addKeyword(keyword);
  ajv.addSchema({ $id: SCHEMAS_ID, $defs: rewriteRefs(spec.components?.schemas ?? {}) });
  return ajv;
}

/** Compiles a schema taken from anywhere in the spec. */
export function compileSchema(ajv: Ajv2020, schema: JsonObject): ValidateFunction {
  return ajv.compile(rewriteRefs(schema));
}

export function describeErrors(errors: ErrorObject[] | null | undefined, where: string): string {
  const e = errors?.[0];
  if (!e) return `${where} is invalid`;
  // A value that fits none of several forms (an identity credential whose fields are of no
  // kind or of two): what each form lacks, not only what the first one does.
  const last = errors!.at(-1)!;
  if (last.keyword === 'oneOf' && errors!.length > 1) {
    const forms = errors!.slice(0, -1).map((b) => describeErrors([b], where).replace(`${where}${last.instancePath} `, ''));
    return `${where}${last.instancePath} matches none of its forms: ${forms.join('; or ')}`;
  }
  const at = `${where}${e.instancePath}`;
  if (e.keyword === 'additionalProperties') return `${at} must not have the property '${e.params.additionalProperty}'`;
  if (e.keyword === 'required') return `${at} must have the property '${e.params.missingProperty}'`;
  if (e.keyword === 'enum') return `${at} must be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
  return `${at} ${e.message}`;
}
