// BL1-BL3 (docs/conformance-rules.md, Billing), and F9 (web fetch billing), which is judged
// through GET /v1/billing: the account's fields; the usage block exactly when from_date,
// to_date or granularity is given; the usage series equal to GET /v1/sessions/history
// ?metrics=credits_used for the same range and granularity, without web-fetch credits;
// each web fetch answered 200 adding 0.005 credits and an error adding none.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line } from '../http.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

const FETCH_CREDITS = 0.005;
const EPSILON = 1e-6;
const FETCH_TIMEOUT_MS = 150_000;

type Series = [string, number][];

function answer(t: T, ex: Exchange) {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

export default defineRules((ctx: SuiteContext) => {
  const billingOp = ctx.contract.operation('getBilling');
  const historyOp = ctx.contract.operation('getSessionHistory');

  const billing = async (t: T, query: Record<string, string> = {}) => {
    const built = await ctx.build(billingOp);
    built.query = Object.entries(query);
    const ex = await ctx.call(built);
    const res = answer(t, ex);
    t.assert(res.status === 200, `${line(ex.request, res, 300)}`);
    const verdict = bodyVerdict(ctx.contract, billingOp, res);
    t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? `${verdict.message}\n${line(ex.request, res, 300)}` : '');
    return { ex, data: (res.json as { data: Record<string, any> }).data };
  };

  /** Every page of the history's credits_used series for the range. */
  const history = async (t: T, query: Record<string, string>): Promise<Series> => {
    const out: Series = [];
    for (let page = 1; page < 1000; page++) {
      const built = await ctx.build(historyOp);
      built.query = [...Object.entries(query), ['metrics', 'credits_used'], ['limit', '100'], ['page', String(page)]];
      const ex = await ctx.call(built);
      const res = answer(t, ex);
      t.assert(res.status === 200, line(ex.request, res, 300));
      const body = res.json as { data: { date: string; credits_used?: number }[]; pagination: { total_pages: number } };
      out.push(...body.data.map((p): [string, number] => [new Date(p.date).toISOString(), p.credits_used ?? NaN]));
      if (page >= body.pagination.total_pages) break;
    }
    return out;
  };

  const usageSeries = (data: Record<string, any>): Series =>
    (data.usage?.buckets ?? []).map((b: { start: string; credits_used: number }): [string, number] => [new Date(b.start).toISOString(), b.credits_used]);

  const sameSeries = (a: Series, b: Series) => a.length === b.length && a.every(([d, c], i) => d === b[i][0] && Math.abs(c - b[i][1]) < EPSILON);

  /** A session created and ended, so that the range holds settled credits. */
  const settledSession = async (t: T) => {
    const op = ctx.contract.operation('createSession');
    const ex = await ctx.call(await ctx.build(op), { bodyValue: { browser: { headless: { active: true } } } });
    const res = answer(t, ex);
    if (res.status !== 200) return `no session to settle: ${line(ex.request, res, 200)}`;
    const id = (res.json as { data: { id: string } }).data.id;
    await sleep(1000);
    const end = await ctx.call(await ctx.build(ctx.contract.operation('endSession'), { pathParams: { session_id: id } }));
    return `session ${id} ran ~1 s and ended (${end.response?.status ?? end.error})`;
  };

  const fetchOp = () => ctx.contract.operations.find((o) => o.id === 'fetchWebpage');
  const fetchOnce = async (t: T, url: string) => {
    const op = fetchOp()!;
    const ex = await ctx.call(await ctx.build(op), { bodyValue: { url }, timeoutMs: FETCH_TIMEOUT_MS });
    return answer(t, ex);
  };

  return [
    check('BL1 GET /v1/billing answers credit balance, current-period usage, tier and limits', async (t: T) => {
      const { ex, data } = await billing(t);
      t.assert(typeof data.credits === 'number' && Number.isFinite(data.credits), `credits: ${JSON.stringify(data.credits)}`);
      t.assert(typeof data.credits_used === 'number' && data.credits_used >= 0, `credits_used: ${JSON.stringify(data.credits_used)}`);
      t.assert(typeof data.included_credits === 'number' && data.included_credits >= 0, `included_credits: ${JSON.stringify(data.included_credits)}`);
      t.assert(typeof data.tier === 'string' && data.tier.length > 0, `tier: ${JSON.stringify(data.tier)}`);
      t.assert(
        Number.isInteger(data.max_concurrent_browsers) && data.max_concurrent_browsers >= 0,
        `max_concurrent_browsers: ${JSON.stringify(data.max_concurrent_browsers)}`,
      );
      t.assert(data.cost_limit === null || (typeof data.cost_limit === 'number' && data.cost_limit >= 0), `cost_limit: ${JSON.stringify(data.cost_limit)}`);
      const start = Date.parse(data.billing_period?.start);
      const end = Date.parse(data.billing_period?.end);
      t.assert(
        start < end && start <= Date.now() + 60_000 && Date.now() - 60_000 < end,
        `billing_period ${JSON.stringify(data.billing_period)} does not hold now`,
      );
      t.note(line(ex.request, ex.response!, 200));
    }),

    check('BL2 no usage block without from_date, to_date and granularity; one with any of them', async (t: T) => {
      const none = await billing(t);
      t.assert(!('usage' in none.data), `usage present without parameters: ${String(JSON.stringify(none.data.usage)).slice(0, 200)}`);
      const to = new Date();
      const from = new Date(to.getTime() - 2 * 86_400_000);
      const queries: Record<string, string>[] = [
        { from_date: from.toISOString() },
        { to_date: to.toISOString() },
        { granularity: 'day' },
        { from_date: from.toISOString(), to_date: to.toISOString(), granularity: 'hour' },
      ];
      for (const query of queries) {
        const { data } = await billing(t, query);
        const u = data.usage;
        t.assert(
          u && Array.isArray(u.buckets) && typeof u.granularity === 'string',
          `${new URLSearchParams(query)}: no usage block: ${JSON.stringify(data).slice(0, 300)}`,
        );
      }
      t.note('absent without parameters; present with from_date, to_date, granularity, and all three');
    }),

    check('BL3 the usage series equals GET /v1/sessions/history?metrics=credits_used, without web-fetch credits', async (t: T) => {
      t.note(await settledSession(t));
      const to = new Date(Date.now() + 3_600_000);
      const from = new Date(Date.now() - 2 * 86_400_000);
      const ranges: Record<string, string>[] = [
        { from_date: from.toISOString(), to_date: to.toISOString(), granularity: 'hour' },
        { from_date: from.toISOString(), to_date: to.toISOString(), granularity: 'day' },
        { from_date: new Date(Date.now() - 90 * 86_400_000).toISOString(), to_date: to.toISOString(), granularity: 'week' },
        { from_date: new Date(Date.now() - 90 * 86_400_000).toISOString(), to_date: to.toISOString(), granularity: 'month' },
      ];
      // Sessions of other checks may settle meanwhile ("recent buckets can still grow"):
      // billing, history, billing again, until both billing reads agree.
      const compare = async (query: Record<string, string>) => {
        for (let attempt = 1; ; attempt++) {
          const a = usageSeries((await billing(t, query)).data);
          const h = await history(t, query);
          const b = usageSeries((await billing(t, query)).data);
          if (sameSeries(a, b) || attempt === 5) {
            t.assert(
              sameSeries(a, h),
              `${new URLSearchParams(query)}: billing usage ${JSON.stringify(a.filter(([, c]) => c > 0))} (${a.length} buckets) ≠ history ${JSON.stringify(h.filter(([, c]) => c > 0))} (${h.length} periods)`,
            );
            return a;
          }
          await sleep(1000);
        }
      };
      const totals: string[] = [];
      for (const query of ranges) {
        const s = await compare(query);
        totals.push(`${query.granularity}: ${s.length} buckets, ${s.reduce((sum, [, c]) => sum + c, 0).toFixed(6)} credits`);
      }
      t.note(totals.join('; '));

      // Web fetch: credits_used grows, the series does not.
      if (!fetchOp()) return t.note('the contract has no fetchWebpage: the exclusion of web-fetch credits is not exercised');
      const query = ranges[0];
      const before = await billing(t, query);
      const res = await fetchOnce(t, await pageUrl());
      t.assert(res.status === 200, `web fetch of a fixture page answered ${res.status}: ${res.text.slice(0, 200)}`);
      const after = await billing(t, query);
      const seriesBefore = usageSeries(before.data).reduce((s, [, c]) => s + c, 0);
      const seriesAfter = usageSeries(after.data).reduce((s, [, c]) => s + c, 0);
      const used = after.data.credits_used - before.data.credits_used;
      t.assert(used >= FETCH_CREDITS - EPSILON, `credits_used grew by ${used} after a web fetch answered 200`);
      // Whatever else settled meanwhile shows in both; the fetch only in credits_used.
      t.assert(
        Math.abs(used - (seriesAfter - seriesBefore) - FETCH_CREDITS) < EPSILON,
        `credits_used grew by ${used}, the usage series by ${seriesAfter - seriesBefore}: the fetch's ${FETCH_CREDITS} should be in the first only`,
      );
      t.note(`a web fetch: credits_used +${used.toFixed(6)}, series +${(seriesAfter - seriesBefore).toFixed(6)}`);
    }),

    check('F9 each web fetch answered 200 adds 0.005 credits; 4xx and 5xx add none', async (t: T) => {
      if (!fetchOp()) t.skip('the contract has no fetchWebpage');
      const url = await pageUrl();
      for (let attempt = 1; ; attempt++) {
        const before = (await billing(t)).data.credits_used as number;
        const ok = await fetchOnce(t, url);
        t.assert(ok.status === 200, `web fetch of a fixture page answered ${ok.status}: ${ok.text.slice(0, 200)}`);
        const mid = (await billing(t)).data.credits_used as number;
        const bad = await fetchOnce(t, 'http://no-such-host.invalid/');
        t.assert(bad.status >= 400, `web fetch of a host that does not resolve answered ${bad.status}`);
        const after = (await billing(t)).data.credits_used as number;
        const [paid, free] = [mid - before, after - mid];
        // A session of another check settling in between adds to both; try again then.
        if ((Math.abs(paid - FETCH_CREDITS) < EPSILON && Math.abs(free) < EPSILON) || attempt === 3) {
          t.assert(Math.abs(paid - FETCH_CREDITS) < EPSILON, `a 200 added ${paid} credits, not ${FETCH_CREDITS}`);
          t.assert(Math.abs(free) < EPSILON, `a ${bad.status} added ${free} credits, not 0`);
          t.note(`200 → +${paid.toFixed(6)}; ${bad.status} → +${free.toFixed(6)}`);
          return;
        }
      }
    }),
  ];

  /** A small page on the suite's fixture server, for web fetch. */
  async function pageUrl(): Promise<string> {
    const path = '/conformance/billing-page';
    ctx.fixtures.route('GET', path, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>billing</title><p id="x">static</p><script>document.getElementById("x").textContent = "rendered"</script>');
    });
    return ctx.fixtures.url(path);
  }
});
