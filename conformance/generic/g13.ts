// G13 boundary values: for every operation, its request schema taken to its edges
// (boundaries.ts): each field of the body, query and path at its minimum and maximum and one
// past them, empty and longest, every enum value, left out; arrays empty and full; the body
// empty, absent, every optional field. URL fields point at a page of the fixture server, so
// that the page's own limits are reached too (a PDF's last page, the viewport's edge, a
// selector's count). What the contract accepts is served or refused with a 4xx; what it
// forbids is refused with a 4xx; nothing is a 5xx but a documented 502/503/504 (an
// upstream's fault), and every answer is one the operation documents.
//
// Deterministic: the cases are the contract's, and where an operation has more valid cases
// than its budget, `--seed S` picks which run (the check's name carries the seed; `--only
// G13 --seed S` repeats a run). What a valid case creates is removed at once (a session
// holds a browser). Runs after G12, for the same reason: a valid case changes what it touches.
import type { Operation } from '../contract.js';
import { extractId, type CallOptions, type Exchange, type SuiteContext } from '../context.js';
import { applyToBody, boundaryCases, jsonMedia, prepareBase, type BoundaryCase } from '../boundaries.js';
import { hash, prng } from '../prng.js';
import { buildRequest, type BuiltRequest } from '../requests.js';
import { documentedAnswerProblems } from '../responses.js';
import { check, defineRules, type Check, type T } from '../runner.js';
import { exchangeLine } from './common.js';

/** Valid cases an operation, at most: each may load a page or launch a browser. */
export const VALID_BUDGET = 12;

/** The cases that run: every refused one, and the valid ones up to the budget, by rank, the seed breaking ties. */
export function chooseCases(all: BoundaryCase[], seed: number, opId: string, budget = VALID_BUDGET): BoundaryCase[] {
  const rand = prng(hash(`${seed}:G13:${opId}`));
  const keyed = all.map((c) => ({ c, k: rand() }));
  const valid = keyed.filter((x) => x.c.valid).sort((a, b) => a.c.rank - b.c.rank || a.k - b.k);
  return [...valid.slice(0, budget).map((x) => x.c), ...all.filter((c) => !c.valid)];
}

/** The request of a case: the base request with the case's change. */
export function caseRequest(base: BuiltRequest, c: BoundaryCase): { built: BuiltRequest; options: CallOptions } {
  const built: BuiltRequest = { ...base, pathParams: { ...base.pathParams }, query: [...base.query] };
  if (c.body) {
    if ('value' in c.body) return { built, options: { bodyValue: c.body.value } };
    if (c.body.text === null) return { built: { ...built, body: undefined }, options: {} };
    return { built, options: { rawBody: { contentType: base.body?.mediaType ?? 'application/json', text: c.body.text } } };
  }
  const v = c.variation!;
  const name = String(v.at[0]);
  if (v.place === 'path') built.pathParams[name] = String(v.value);
  else if (v.place === 'query') {
    built.query = built.query.filter(([k]) => k !== name);
    const values = v.value === undefined ? [] : Array.isArray(v.value) ? v.value : [v.value];
    for (const x of values) built.query.push([name, typeof x === 'object' ? JSON.stringify(x) : String(x)]);
  } else return { built, options: { bodyValue: applyToBody(base.body?.value, v) } };
  return { built, options: {} };
}

export default defineRules((ctx: SuiteContext) => {
  const seed = ctx.options.fuzzSeed ?? 1;
  const checks: Check[] = [];
  for (const op of ctx.contract.operations) {
    checks.push(check(`G13 ${op.id} request schema at its boundaries (seed ${seed})`, (t: T) => run(ctx, op, seed, t), { stateful: true, parallel: true }));
  }
  return checks;
});

async function run(ctx: SuiteContext, op: Operation, seed: number, t: T): Promise<void> {
  // The smallest valid request: each case then changes one thing of it. A DELETE gets an
  // item of its own, so the run's shared one stays; it is removed where its cases left it.
  const base = await ctx.build(op, { body: 'minimal', fresh: op.method === 'DELETE' });
  try {
    await runCases(ctx, op, seed, t, base);
  } finally {
    await ctx.release(base);
  }
}

async function runCases(ctx: SuiteContext, op: Operation, seed: number, t: T, base: BuiltRequest): Promise<void> {
  const page = await ctx.fixtures.url('/site/form.html');
  const media = jsonMedia(op);
  const schema = media?.schema ? ctx.contract.deref(media.schema) : undefined;
  if (base.body && media) base.body = { ...base.body, value: prepareBase(ctx.contract, schema, base.body.value, page) };
  const all = boundaryCases(ctx.contract, op, base.body?.value, { pageUrl: page }).map((c) =>
    c.variation?.place === 'body' && schema ? { ...c, valid: ctx.contract.validates(schema, applyToBody(base.body?.value, c.variation)) === true } : c,
  );
  if (all.length === 0) t.skip('no parameter but ids and no body: nothing has a boundary');
  const chosen = chooseCases(all, seed, op.id);
  const problems: string[] = [];
  const statuses = new Map<number | string, number>();
  for (const c of chosen) {
    const { built, options } = caseRequest(base, c);
    // A valid case may be the longest request its operation allows (a task run answered when it
    // ends, the most text typed, behind the other checks' calls to the shared session): its
    // time-out is three times the run's. G13 looks for server errors; a slow machine is not one.
    const ex = await ctx.call(built, { ...options, timeoutMs: c.valid ? 3 * ctx.timeoutMs : ctx.probeTimeoutMs });
    await removeWhatItMade(ctx, ex);
    await endPromisedSession(ctx, ex);
    const status = ex.response?.status ?? 'no answer';
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const problem = judge(ctx, op, c, ex);
    if (problem) problems.push(`${c.valid ? 'valid' : 'refused'}: ${c.what}: ${problem}: ${exchangeLine(ex, 300)}`);
  }
  const summary = [...statuses].map(([s, n]) => `${n} × ${s}`).join(', ');
  t.assert(
    problems.length === 0,
    `${problems.length} of ${chosen.length} cases (seed ${seed}; --only G13 --seed ${seed} repeats them):\n${problems.join('\n')}`,
  );
  t.note(`${chosen.length} cases (${chosen.filter((c) => c.valid).length} valid of ${all.filter((c) => c.valid).length}): ${summary}`);
}

/** What is wrong with the answer to a case, if anything. */
function judge(ctx: SuiteContext, op: Operation, c: BoundaryCase, ex: Exchange): string | undefined {
  const res = ex.response;
  if (!res) return `no answer: ${ex.error}`;
  if (res.status >= 500 && ![502, 503, 504].includes(res.status)) return 'a server error';
  if (!c.valid && res.status < 400) return 'the contract forbids it, and it was not refused';
  const problems = documentedAnswerProblems(ctx.contract, op, res);
  return problems.length ? problems.join('; ') : undefined;
}

/**
 * Removes at once what a case created (a session holds a browser until it ends): the item its
 * answer names, not whatever else is new in the registry (checks beside it create the run's
 * shared items, which must stay).
 */
async function removeWhatItMade(ctx: SuiteContext, ex: Exchange): Promise<void> {
  const c = ctx.contract.createdBy(ex.built.op);
  if (!c?.deleter || !ex.response || ex.response.status >= 300) return;
  const id = extractId(c, ex.built, ex.response);
  const r = id === undefined ? undefined : ctx.registry.get(c.path, id);
  if (r && !r.deleted) await ctx.call(buildRequest(ctx.contract, c.deleter, { pathParams: r.pathParams }), { key: { value: r.apiKey } });
}

/**
 * Ends the session an answer promises rather than names (createSessionAsync: a request id,
 * the session made after the answer): its status is read until it names the session, which is
 * then ended. Left to its timeouts, each held a browser for minutes; under CI's load four of
 * them, with the other checks' sessions, filled the server's browsers, and a task run's
 * `sync` answer queued past its wait.
 */
async function endPromisedSession(ctx: SuiteContext, ex: Exchange): Promise<void> {
  const requestId = (ex.response?.json as { data?: { request_id?: unknown } } | undefined)?.data?.request_id;
  const status = ctx.contract.find('GET', `${ex.built.op.path}/{request_id}/status`);
  const deleter = ctx.contract.collections.get('/v1/sessions')?.deleter;
  if (!ex.response || ex.response.status >= 300 || typeof requestId !== 'string' || !status || !deleter) return;
  const deadline = Date.now() + 3 * ctx.timeoutMs;
  while (Date.now() < deadline) {
    const read = await ctx.call(buildRequest(ctx.contract, status, { pathParams: { request_id: requestId } }));
    const data = (read.response?.json as { data?: { status?: unknown; session?: { session_id?: unknown } } } | undefined)?.data;
    if (data?.status === 'ready' && typeof data.session?.session_id === 'string') {
      const param = /\{([^}]+)\}/.exec(deleter.path)![1]!;
      await ctx.call(buildRequest(ctx.contract, deleter, { pathParams: { [param]: data.session.session_id } }));
      return;
    }
    if (data?.status !== 'pending' && data?.status !== 'processing') return; // failed, cancelled, or no answer
    await new Promise((r) => setTimeout(r, 250));
  }
}
