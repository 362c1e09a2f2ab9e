// K1-K3 (API keys): the key is read from `service-api-key` or from `anchor-api-key`, the
// header the hosted vendor's SDK, CLI and examples send, so that their code works with the
// base URL changed alone. The contract offers both as alternative security schemes, and
// names `service-api-key` the primary: a request that carries both is read from it alone.
// Each check sends GET /v1/billing, which changes nothing, with exactly the headers it names.
import type { Exchange, SuiteContext } from '../context.js';
import { answered, brief, exchangeLine } from '../generic/common.js';
import { documentedAnswerProblems } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

const PRIMARY = 'service-api-key';
const ALIAS = 'anchor-api-key';

export default defineRules((ctx: SuiteContext) => {
  const op = ctx.contract.operation('getBilling');

  /** The header names of the apiKey schemes the operation accepts each on its own. */
  const offered = (): string[] => {
    const schemes = ctx.contract.spec.components?.securitySchemes ?? {};
    return op.security
      .filter((requirement) => Object.keys(requirement).length === 1)
      .map((requirement) => schemes[Object.keys(requirement)[0]])
      .filter((s) => s?.type === 'apiKey' && s.in === 'header')
      .map((s) => String(s.name).toLowerCase());
  };

  /** GET /v1/billing carrying exactly these key headers. */
  const send = async (headers: Record<string, string>): Promise<Exchange> => {
    const built = await ctx.build(op);
    Object.assign(built.headers, headers);
    return ctx.call(built, { key: 'none', timeoutMs: ctx.probeTimeoutMs });
  };

  const expectStatus = async (t: T, headers: Record<string, string>, status: 200 | 401, what: string) => {
    const ex = await send(headers);
    const res = answered(t, ex);
    t.assert(res.status === status, `${what}: expected ${status}: ${exchangeLine(ex)}`);
    const problems = documentedAnswerProblems(ctx.contract, op, res);
    t.assert(problems.length === 0, `${what}: not the documented ${status} answer: ${problems.join('; ')}: ${exchangeLine(ex)}`);
    t.note(`${what}: ${brief(ex)}`);
  };

  return [
    check(
      `K1 the key is accepted in ${ALIAS} alone, which the contract offers as an alternative to ${PRIMARY}`,
      async (t: T) => {
        const names = offered();
        t.assert(
          names.includes(PRIMARY) && names.includes(ALIAS),
          `${op.id} accepts ${names.join(', ') || 'no API key header'} on its own, not both ${PRIMARY} and ${ALIAS}`,
        );
        await expectStatus(t, { [ALIAS]: ctx.mainKey ?? '' }, 200, `the key in ${ALIAS}`);
      },
      { stateful: false, parallel: true },
    ),

    // A mock knows no keys: any key passes it.
    check(
      `K2 a wrong key in ${ALIAS} alone answers 401 with the documented 401 body`,
      async (t: T) => {
        await expectStatus(t, { [ALIAS]: ctx.wrongKey }, 401, `a wrong key in ${ALIAS}`);
      },
      { parallel: true },
    ),

    check(
      `K3 with both headers ${PRIMARY} is read: a wrong ${ALIAS} beside the right ${PRIMARY} passes, the right ${ALIAS} beside a wrong ${PRIMARY} answers 401`,
      async (t: T) => {
        const key = ctx.mainKey ?? '';
        await expectStatus(t, { [PRIMARY]: key, [ALIAS]: ctx.wrongKey }, 200, `the key in ${PRIMARY}, a wrong one in ${ALIAS}`);
        await expectStatus(t, { [PRIMARY]: ctx.wrongKey, [ALIAS]: key }, 401, `a wrong key in ${PRIMARY}, the key in ${ALIAS}`);
      },
      { parallel: true },
    ),
  ];
});
