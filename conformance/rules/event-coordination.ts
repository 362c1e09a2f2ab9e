// EC1-EC4 (event coordination, POST /v1/events/{event_name} and .../wait): a value posted
// under a name answers the wait under way for it, and is kept for the next wait when no one
// waits (consumed once); a wait with nothing posted answers 408 after its timeoutMs, not
// before; names are the project's own. Each check uses names of its own, so the checks run
// side by side and a run leaves nothing behind but values it consumed.
import { randomBytes } from 'node:crypto';
import type { Exchange, KeyChoice, SuiteContext } from '../context.js';
import { answered, exchangeLine } from '../generic/common.js';
import { buildRequest } from '../requests.js';
import { documentedAnswerProblems } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

export default defineRules((ctx: SuiteContext) => {
  const signalOp = ctx.contract.operation('signalEvent');
  const waitOp = ctx.contract.operation('waitForEvent');
  const fresh = (label: string) => `conformance-${label}-${randomBytes(6).toString('hex')}`;

  const signal = (name: string, data: unknown, key: KeyChoice = 'main') =>
    ctx.call(buildRequest(ctx.contract, signalOp, { pathParams: { event_name: name } }), { bodyValue: { data }, key });
  const wait = (name: string, timeoutMs: number, key: KeyChoice = 'main') =>
    ctx.call(buildRequest(ctx.contract, waitOp, { pathParams: { event_name: name } }), { bodyValue: { timeoutMs }, key, timeoutMs: timeoutMs + 15_000 });

  /** The answer, asserted to be `status` with its documented body. */
  const expectAnswer = (t: T, ex: Exchange, status: number, what: string) => {
    const res = answered(t, ex);
    t.assert(res.status === status, `${what}: expected ${status}: ${exchangeLine(ex)}`);
    const op = new URL(ex.request.url).pathname.endsWith('/wait') ? waitOp : signalOp;
    const problems = documentedAnswerProblems(ctx.contract, op, res);
    t.assert(problems.length === 0, `${what}: not the documented ${status} answer: ${problems.join('; ')}`);
    return res;
  };

  return [
    check(
      'EC1 a value posted while a wait for its name is under way answers that wait with the posted data',
      async (t: T) => {
        const name = fresh('ec1');
        // Sent before the post; should the post still arrive first, the value is kept for this
        // wait (EC2), so the answer is the same either way and the check cannot flake.
        const waiting = wait(name, 20_000);
        expectAnswer(t, await signal(name, { code: '482913', n: [1, 2] }), 200, 'the post');
        const res = expectAnswer(t, await waiting, 200, 'the wait');
        t.assert(JSON.stringify(res.json) === JSON.stringify({ data: { code: '482913', n: [1, 2] } }), `the wait answered ${JSON.stringify(res.json)}`);
      },
      { parallel: true },
    ),

    check(
      'EC2 a value posted while no one waits is kept for the next wait, which answers it at once; the wait after answers 408',
      async (t: T) => {
        const name = fresh('ec2');
        expectAnswer(t, await signal(name, { kept: true }), 200, 'the post');
        const first = expectAnswer(t, await wait(name, 5_000), 200, 'the first wait');
        t.assert(JSON.stringify(first.json) === JSON.stringify({ data: { kept: true } }), `the first wait answered ${JSON.stringify(first.json)}`);
        expectAnswer(t, await wait(name, 0), 408, 'the second wait, the value consumed');
      },
      { parallel: true },
    ),

    check(
      'EC3 a wait with nothing posted answers 408 with the documented body once its timeoutMs has passed, not before',
      async (t: T) => {
        const started = Date.now();
        const ex = await wait(fresh('ec3'), 1_500);
        const took = Date.now() - started;
        expectAnswer(t, ex, 408, 'the wait');
        t.assert(took >= 1_500, `answered after ${took} ms, before its timeoutMs of 1500`);
        t.note(`408 after ${took} ms`);
      },
      { parallel: true },
    ),

    check(
      "EC4 names are the project's own: another project's wait does not take a value posted under the same name",
      async (t: T) => {
        const other = await ctx.otherKey();
        if (!other.key) t.skip(`no other project's key: ${other.reason}`);
        const name = fresh('ec4');
        expectAnswer(t, await signal(name, { mine: true }), 200, 'the post');
        expectAnswer(t, await wait(name, 0, { value: other.key }), 408, "the other project's wait");
        const res = expectAnswer(t, await wait(name, 0), 200, "the project's own wait");
        t.assert(JSON.stringify(res.json) === JSON.stringify({ data: { mine: true } }), `the wait answered ${JSON.stringify(res.json)}`);
      },
      { parallel: true },
    ),
  ];
});
