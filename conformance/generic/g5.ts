// G5 documented required response headers are present and valid (and documented headers
// that are present are valid). Generated for operations that document a header anywhere.
import { defineRules, check, type T } from '../runner.js';
import { headerVerdict } from '../responses.js';
import { judgeAttempts } from './common.js';

export default defineRules((ctx) =>
  ctx.contract.operations
    .filter((op) => Object.values(op.responses).some((r) => Object.keys(r.headers ?? {}).some((h) => h.toLowerCase() !== 'content-type')))
    .map((op) =>
      check(
        `G5 ${op.id} documented headers are present and valid`,
        async (t: T) =>
          judgeAttempts(t, await ctx.exercise(op), (res) => {
            const v = headerVerdict(ctx.contract, op, res);
            if (v.skip) return { kind: 'skip', reason: v.skip };
            if (v.problems.length) return { kind: 'fail', message: v.problems.join('; ') };
            if (v.required === 0 && v.checked.length === 0) {
              return { kind: 'skip', reason: `the ${res.status} response documents only optional headers, and none came` };
            }
            return { kind: 'pass', note: v.checked.join(', ') };
          }),
        { stateful: false },
      ),
    ),
);
