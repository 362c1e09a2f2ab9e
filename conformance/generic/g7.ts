// G7 invalid bodies answer 4xx with the documented error answer for that status, never
// 5xx: a missing required field, a wrong type, an extra field on a closed schema,
// malformed JSON, a wrong Content-Type. For every operation with a JSON request body.
import type { Contract, JsonObject, Operation } from '../contract.js';
import type { CallOptions, SuiteContext } from '../context.js';
import { isJsonMediaType } from '../http.js';
import { defineRules, check, type Check, type T } from '../runner.js';
import { documentedAnswerProblems } from '../responses.js';
import { answered, exchangeLine } from './common.js';

interface ObjectView {
  properties: Record<string, JsonObject>;
  required: string[];
  closed: boolean;
}

/** The top-level object a body schema describes, allOf members merged. */
export function objectView(contract: Contract, schema: JsonObject | undefined): ObjectView | undefined {
  if (!schema) return undefined;
  const s = contract.deref(schema);
  const view: ObjectView = {
    properties: { ...(s.properties ?? {}) },
    required: [...(s.required ?? [])],
    closed: s.additionalProperties === false || s.unevaluatedProperties === false,
  };
  for (const member of s.allOf ?? []) {
    const sub = objectView(contract, member);
    if (!sub) continue;
    Object.assign(view.properties, sub.properties);
    view.required.push(...sub.required.filter((r) => !view.required.includes(r)));
    if (s.allOf.length === 1 && !s.properties) view.closed ||= sub.closed;
  }
  const isObject = s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object')) || Object.keys(view.properties).length > 0;
  return isObject ? view : undefined;
}

/** A request to send instead of the valid one, or the reason the case does not apply. */
type Mutation = { what: string; options: CallOptions } | string;

const WRONG_VALUES: unknown[] = [12345, 'conformance', true, [], {}, null];

function jsonContent(op: Operation): { type: string; schema?: JsonObject } | undefined {
  const entry = Object.entries(op.requestBody?.content ?? {}).find(([type]) => isJsonMediaType(type.split(';')[0].trim().toLowerCase()));
  return entry ? { type: entry[0].split(';')[0].trim().toLowerCase(), schema: entry[1].schema } : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return !!v && typeof v === 'object' && !Array.isArray(v);
}

function probe(ctx: SuiteContext, op: Operation, name: string, mutate: (valid: unknown, schema: JsonObject | undefined) => Mutation): Check {
  return check(
    `G7 ${op.id} ${name} answers 4xx`,
    async (t: T) => {
      const built = await ctx.build(op);
      if (!built.body || !isJsonMediaType(built.body.mediaType)) t.skip('the synthesized request has no JSON body');
      const m = mutate(built.body.value, jsonContent(op)?.schema);
      if (typeof m === 'string') t.skip(m);
      const ex = await ctx.call(built, { ...m.options, timeoutMs: ctx.probeTimeoutMs });
      const res = answered(t, ex);
      t.assert(res.status < 500, `${m.what}: a server error: ${exchangeLine(ex)}`);
      t.assert(res.status >= 400, `${m.what}: accepted: ${exchangeLine(ex)}`);
      if (op.secured) t.assert(res.status !== 401, `${m.what}: 401 to the run's key (${ctx.mainKeySource}), so the body was never judged: ${exchangeLine(ex)}`);
      const problems = documentedAnswerProblems(ctx.contract, op, res);
      t.assert(problems.length === 0, `${m.what}: ${problems.join('; ')}: ${exchangeLine(ex)}`);
      t.note(`${m.what} → ${res.status}`);
    },
    { stateful: false, parallel: true },
  );
}

export default defineRules((ctx) => {
  const { contract } = ctx;
  // A body that cannot be checked (no schema, or one strict Ajv will not compile alone) counts as invalid;
  // a property value only when its schema says so.
  const invalid = (schema: JsonObject | undefined, value: unknown) => !schema || contract.validates(schema, value) !== true;
  const invalidProperty = (schema: JsonObject, value: unknown) => contract.validates(schema, value) === false;
  const checks: Check[] = [];
  for (const op of contract.operations) {
    const json = jsonContent(op);
    if (!json) continue;
    const view = objectView(contract, json.schema);

    if (view && view.required.length > 0) {
      const field = view.required[0];
      checks.push(
        probe(ctx, op, `missing required field ${field}`, (valid, schema) => {
          if (!isObject(valid)) return 'the valid body is not an object';
          const { [field]: _dropped, ...rest } = valid;
          if (!invalid(schema, rest)) return `the body without ${field} still validates`;
          return { what: `body without ${field}`, options: { bodyValue: rest } };
        }),
      );
    }

    checks.push(
      probe(ctx, op, 'wrong type', (valid, schema) => {
        if (isObject(valid) && view) {
          const names = [...new Set([...view.required, ...Object.keys(valid), ...Object.keys(view.properties)])];
          for (const name of names) {
            const propSchema = view.properties[name];
            if (!propSchema) continue;
            for (const wrong of WRONG_VALUES) {
              const body = { ...valid, [name]: wrong };
              if (invalidProperty(propSchema, wrong) && invalid(schema, body)) {
                return { what: `body with ${name}: ${JSON.stringify(wrong)}`, options: { bodyValue: body } };
              }
            }
          }
        }
        for (const wrong of WRONG_VALUES) {
          if (invalid(schema, wrong)) return { what: `body ${JSON.stringify(wrong)}`, options: { bodyValue: wrong } };
        }
        return 'no value of a wrong type exists for this schema';
      }),
    );

    if (view?.closed) {
      checks.push(
        probe(ctx, op, 'extra field on a closed schema', (valid, schema) => {
          if (!isObject(valid)) return 'the valid body is not an object';
          const body = { ...valid, conformance_extra_field: 'x' };
          if (!invalid(schema, body)) return 'the body with an extra field still validates';
          return { what: 'body with the extra field conformance_extra_field', options: { bodyValue: body } };
        }),
      );
    }

    checks.push(
      probe(ctx, op, 'malformed JSON', () => ({
        what: 'malformed JSON',
        options: { rawBody: { contentType: json.type, text: '{"conformance": ' } },
      })),
    );

    const accepted = Object.keys(op.requestBody?.content ?? {}).map((k) => k.split(';')[0].trim().toLowerCase());
    if (!accepted.some((k) => k === 'text/plain' || k === 'text/*' || k === '*/*')) {
      checks.push(
        probe(ctx, op, 'wrong Content-Type', (valid) => ({
          what: 'a JSON body sent as text/plain',
          options: { rawBody: { contentType: 'text/plain', text: JSON.stringify(valid) } },
        })),
      );
    }
  }
  return checks;
});
