// G3 every response's Content-Type is one documented for that status.
import { defineRules, check, type T } from '../runner.js';
import { contentTypeVerdict } from '../responses.js';
import { judgeAttempts } from './common.js';

export default defineRules((ctx) =>
  ctx.contract.operations.map((op) =>
    check(
      `G3 ${op.id} Content-Type is documented`,
      async (t: T) => judgeAttempts(t, await ctx.exercise(op), (res) => contentTypeVerdict(ctx.contract, op, res)),
      { stateful: false },
    ),
  ),
);
