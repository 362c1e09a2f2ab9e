// G2 every response's status is one the operation documents.
import { defineRules, check, type T } from '../runner.js';
import { statusProblem } from '../responses.js';
import { judgeAttempts } from './common.js';

export default defineRules((ctx) =>
  ctx.contract.operations.map((op) =>
    check(
      `G2 ${op.id} status is documented`,
      async (t: T) => {
        judgeAttempts(t, await ctx.exercise(op), (res) => {
          const problem = statusProblem(ctx.contract, op, res);
          return problem ? { kind: 'fail', message: problem } : { kind: 'pass', note: `${res.status}` };
        });
      },
      { stateful: false },
    ),
  ),
);
