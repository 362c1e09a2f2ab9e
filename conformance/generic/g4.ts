// G4 every JSON response body validates against its schema (Ajv 2020, strict).
import { defineRules, check, type T } from '../runner.js';
import { bodyVerdict } from '../responses.js';
import { judgeAttempts } from './common.js';

export default defineRules((ctx) =>
  ctx.contract.operations.map((op) =>
    check(`G4 ${op.id} JSON body validates`, async (t: T) => judgeAttempts(t, await ctx.exercise(op), (res) => bodyVerdict(ctx.contract, op, res)), {
      stateful: false,
    }),
  ),
);
