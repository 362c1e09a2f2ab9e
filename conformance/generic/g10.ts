// G10 GET never changes state: the same GET twice answers the same (status and body), and
// every listing (a GET whose 200 body has a `data` array) reads the same before and after
// a round of all GETs. Operations whose answers are binary (recordings, screenshots) are
// not compared, and neither are the values the contract marks `x-volatile: true`: values
// that change with time alone (a running session's duration), not with state.
import type { JsonObject, Operation } from '../contract.js';
import type { Exchange, SuiteContext } from '../context.js';
import { isJsonMediaType } from '../http.js';
import { defineRules, check, firstDifference, type T } from '../runner.js';
import { answered, brief, exchangeLine } from './common.js';

/** GETs that answer something new at every call by design. */
const FRESH_BY_DESIGN: Record<string, string> = {
  getAgentAccessChallenge: 'it issues a new challenge at every call, by design',
};

/** Why an operation's answers are not compared, or undefined. */
function notComparable(op: Operation): string | undefined {
  if (FRESH_BY_DESIGN[op.id]) return FRESH_BY_DESIGN[op.id];
  const success = Object.entries(op.responses).filter(([status]) => status.startsWith('2'));
  const types = success.flatMap(([, r]) => Object.keys(r.content ?? {}));
  if (types.length > 0 && !types.some((t) => isJsonMediaType(t.split(';')[0].trim()))) {
    return `its answers are binary (${[...new Set(types)].join(', ')})`;
  }
  return undefined;
}

export function isListing(ctx: SuiteContext, op: Operation): boolean {
  if (op.method !== 'GET') return false;
  const schema = op.responses['200']?.content?.['application/json']?.schema as JsonObject | undefined;
  if (!schema) return false;
  const s = ctx.contract.deref(schema);
  const data = s.properties?.data ? ctx.contract.deref(s.properties.data) : undefined;
  return !!data && (data.type === 'array' || (Array.isArray(data.type) && data.type.includes('array')));
}

/** The properties a schema allows, through $ref and allOf/oneOf/anyOf. */
function propertiesOf(ctx: SuiteContext, schema: JsonObject): Record<string, JsonObject> {
  const s = ctx.contract.deref(schema);
  const out: Record<string, JsonObject> = { ...(s.properties ?? {}) };
  for (const key of ['allOf', 'oneOf', 'anyOf']) for (const sub of s[key] ?? []) Object.assign(out, propertiesOf(ctx, sub));
  return out;
}

/** The value without the parts its schema marks `x-volatile: true`. */
export function withoutVolatile(ctx: SuiteContext, schema: JsonObject | undefined, value: unknown): unknown {
  if (!schema) return value;
  const s = ctx.contract.deref(schema);
  if (Array.isArray(value)) return s.items ? value.map((v) => withoutVolatile(ctx, s.items, v)) : value;
  if (!value || typeof value !== 'object') return value;
  const props = propertiesOf(ctx, s);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const p = props[k] ? ctx.contract.deref(props[k]) : undefined;
    if (p?.['x-volatile'] === true) continue;
    out[k] = withoutVolatile(ctx, p, v);
  }
  return out;
}

function sameAnswer(ctx: SuiteContext, op: Operation, t: T, a: Exchange, b: Exchange, what: string) {
  const ra = answered(t, a);
  const rb = answered(t, b);
  t.assert(ra.status === rb.status, `${what}: ${ra.status} then ${rb.status}\n${exchangeLine(a)}\n${exchangeLine(b)}`);
  if (ra.json !== undefined && rb.json !== undefined) {
    const schema = op.responses[String(ra.status)]?.content?.['application/json']?.schema as JsonObject | undefined;
    const diff = firstDifference(withoutVolatile(ctx, schema, rb.json), withoutVolatile(ctx, schema, ra.json));
    t.assert(!diff, `${what}: the bodies differ at ${diff}`);
  } else {
    t.assert(Buffer.from(ra.bytes).equals(Buffer.from(rb.bytes)), `${what}: the bodies differ (${ra.bytes.length} then ${rb.bytes.length} bytes)`);
  }
}

export default defineRules((ctx) => {
  const gets = ctx.contract.operations.filter((op) => op.method === 'GET');
  const listings = gets.filter((op) => isListing(ctx, op) && !notComparable(op));

  // Listings before, one GET of every operation, listings after: once for all listing checks.
  let round: Promise<Map<string, [Exchange, Exchange]>> | undefined;
  const runRound = () =>
    (round ??= (async () => {
      const listed = [];
      for (const op of listings) listed.push(await ctx.build(op));
      const all = [];
      for (const op of gets) all.push(await ctx.build(op));
      const before = [];
      for (const b of listed) before.push(await ctx.call(b));
      for (const b of all) await ctx.call(b);
      const out = new Map<string, [Exchange, Exchange]>();
      for (let i = 0; i < listed.length; i++) out.set(listings[i].id, [before[i], await ctx.call(listed[i])]);
      return out;
    })());

  return [
    ...gets.map((op) =>
      check(
        `G10 ${op.id} answers the same twice`,
        async (t: T) => {
          const why = notComparable(op);
          if (why) t.skip(why);
          const built = await ctx.build(op);
          const a = await ctx.call(built);
          const b = await ctx.call(built);
          sameAnswer(ctx, op, t, a, b, 'the same GET twice');
          t.note(brief(a));
        },
        { stateful: false },
      ),
    ),
    ...listings.map((op) =>
      check(`G10 ${op.id} listing is unchanged by a round of GETs`, async (t: T) => {
        const [before, after] = (await runRound()).get(op.id)!;
        sameAnswer(ctx, op, t, before, after, `${op.id} before and after a GET of every operation`);
        t.note(brief(after));
      }),
    ),
  ];
});
