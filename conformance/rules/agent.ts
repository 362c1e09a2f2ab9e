// AG1 (agent tools): POST /v1/tools/perform-web-task on a server with no language model
// configured answers the documented 503 `{error: {code: 503, message}}` saying so, not 501
// or 500. The request names a session no project has, so a server that has a model answers
// 404 without starting an agent (the check is then skipped): nothing is run or billed.
import type { SuiteContext } from '../context.js';
import { describe as line } from '../http.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

const NO_SESSION = '00000000-0000-4000-8000-0000000000a1';

export default defineRules((ctx: SuiteContext) => {
  const op = ctx.contract.operation('performWebTask');
  return [
    check(
      'AG1 perform-web-task without a configured model answers 503 with a message that says so (not 501, not 500)',
      async (t: T) => {
        const built = await ctx.build(op);
        // The built request may carry a live session id: this check must start no agent.
        built.query = [['sessionId', NO_SESSION]];
        const ex = await ctx.call(built, { bodyValue: { prompt: 'Read the title of the page.', max_steps: 1 } });
        const res = ex.response;
        if (!res) return t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
        const shown = line(ex.request, res, 300);
        if (res.status === 404) t.skip(`the server has a model configured (it looked for the session): ${shown}`);
        t.assert(res.status === 503, `expected 503 when no model is configured, got ${shown}`);
        const verdict = bodyVerdict(ctx.contract, op, res);
        t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? `${verdict.message}\n${shown}` : '');
        const message = (res.json as { error?: { message?: unknown } })?.error?.message;
        t.assert(
          typeof message === 'string' && /\b(LLM|model)\b/i.test(message) && /configured/i.test(message),
          `the message should say that no model is configured: ${shown}`,
        );
        t.note(shown);
      },
      { parallel: true },
    ),
  ];
});
