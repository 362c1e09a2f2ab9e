// G6 a missing key and a wrong one answer 401 with the documented 401 body, on every
// operation that takes a key (those with `security: []` take none).
import type { SuiteContext, KeyChoice } from '../context.js';
import type { Operation } from '../contract.js';
import { defineRules, check, type T } from '../runner.js';
import { documentedAnswerProblems } from '../responses.js';
import { answered, brief, exchangeLine } from './common.js';

async function expect401(t: T, ctx: SuiteContext, op: Operation, key: KeyChoice) {
  const ex = await ctx.call(await ctx.build(op), { key, timeoutMs: ctx.probeTimeoutMs });
  const res = answered(t, ex);
  t.assert(res.status === 401, `expected 401: ${exchangeLine(ex)}`);
  const problems = documentedAnswerProblems(ctx.contract, op, res);
  t.assert(problems.length === 0, `401 without the documented 401 answer: ${problems.join('; ')}: ${exchangeLine(ex)}`);
  t.note(brief(ex));
}

export default defineRules((ctx) =>
  ctx.contract.operations
    .filter((op) => op.secured)
    .flatMap((op) => [
      check(`G6 ${op.id} without a key answers 401`, (t: T) => expect401(t, ctx, op, 'none'), { stateful: false, parallel: true }),
      // A mock knows no keys: any key passes it.
      check(`G6 ${op.id} with a wrong key answers 401`, (t: T) => expect401(t, ctx, op, 'wrong'), { stateful: true, parallel: true }),
    ]),
);
