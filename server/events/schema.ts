// Validates event envelopes against the contract: openapi.yaml documents each event type
// in its top-level `webhooks:` section, keyed by the type name, as the JSON body of a POST
// (webhooks.<type>.post.requestBody.content['application/json'].schema). Used by the tests
// (every type) and usable by the conformance suite (W4).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import type { EventType } from '../outbox/types.js';

// ajv-formats is CommonJS; under NodeNext its default export may arrive wrapped.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats: AddFormats = (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

export const OPENAPI_PATH = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));

export interface EventSchemas {
  /** Types the contract documents. */
  documented: Set<string>;
  /** Validates a whole envelope; null when the type is not documented. */
  validator(type: EventType | string): ValidateFunction | null;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Copies `node`, rewriting `#/components/...` refs to `#/$defs/components/...`. */
function rewriteRefs(node: Json): Json {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === 'object') {
    const out: { [k: string]: Json } = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `#/$defs/${v.slice(2)}` : rewriteRefs(v);
    }
    return out;
  }
  return node;
}

export function loadEventSchemas(path: string = OPENAPI_PATH): EventSchemas {
  const doc = parse(readFileSync(path, 'utf8')) as { webhooks?: Record<string, any>; components?: Json };
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  const components = rewriteRefs((doc.components ?? {}) as Json);
  const webhooks = doc.webhooks ?? {};
  const cache = new Map<string, ValidateFunction>();
  const schemaOf = (type: string): Json | undefined => webhooks[type]?.post?.requestBody?.content?.['application/json']?.schema as Json | undefined;
  return {
    documented: new Set(Object.keys(webhooks).filter((t) => schemaOf(t) !== undefined)),
    validator(type) {
      const hit = cache.get(type);
      if (hit) return hit;
      const schema = schemaOf(type);
      if (schema === undefined) return null;
      const root = rewriteRefs(schema) as { [k: string]: Json };
      const fn = ajv.compile({ ...root, $defs: { ...((root.$defs as object) ?? {}), components } });
      cache.set(type, fn);
      return fn;
    },
  };
}
