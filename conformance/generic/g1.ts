// G1 every documented operation is served: no 405, and no 404 unless the operation
// documents 404 and the body is the documented 404 body; and no 401 to the run's key.
import { defineRules, check, type T } from '../runner.js';
import { bodyVerdict } from '../responses.js';
import { answered, attemptsOf, brief, exchangeLine } from './common.js';

export default defineRules((ctx) =>
  ctx.contract.operations.map((op) =>
    check(
      `G1 ${op.id} is served`,
      async (t: T) => {
        const ex = await ctx.exercise(op);
        for (const attempt of attemptsOf(ex)) {
          const res = answered(t, attempt);
          t.assert(res.status !== 405, `a documented method answered 405: ${exchangeLine(attempt)}`);
          if (res.status === 404) {
            t.assert(ctx.contract.response(op, 404)?.key === '404', `answered 404, which ${op.id} does not document: ${exchangeLine(attempt)}`);
            const v = bodyVerdict(ctx.contract, op, res);
            t.assert(
              v.kind === 'pass',
              `answered 404 without the documented 404 body (${v.kind === 'fail' ? v.message : v.kind === 'skip' ? v.reason : ''}): ${exchangeLine(attempt)}`,
            );
          }
          if (op.secured) {
            t.assert(res.status !== 401, `answered 401 to the run's key (${ctx.mainKeySource}), so the operation was never reached: ${exchangeLine(attempt)}`);
          }
        }
        t.note(attemptsOf(ex).map(brief).join('; then the required fields only: '));
      },
      { stateful: false },
    ),
  ),
);
