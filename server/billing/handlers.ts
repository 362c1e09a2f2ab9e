// GET /v1/billing: the project's account (balance, this period's usage, tier, limits) and,
// when asked for with any of from_date, to_date, granularity, the usage series. The series
// is the sessions' credits bucketed by creation time, from the same query as
// GET /v1/sessions/history (store.historyBuckets), so the two always agree.
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import { EARLIEST_HISTORY, EARLIEST_HISTORY_MESSAGE, historyBuckets, type Granularity } from '../sessions/index.js';
import { account } from '../credits/account.js';
import type { ClusterNode } from '../cluster/index.js';

export type BillingHandlers = Pick<AppHandlers, 'getBilling'>;

/** More periods than this in one answer is a mistake (hourly over years); as session history. */
const MAX_PERIODS = 10_000;
const periodHours: Record<Granularity, number> = { hour: 1, day: 24, week: 168, month: 744 };
const DAY_MS = 86_400_000;

export type UsageRange = { from: Date; to: Date; granularity: Granularity } | { error: string };

/** The range rules of GET /v1/sessions/history: to defaults to now, from to 30 days before to. */
export function usageRange(q: { from_date?: string; to_date?: string; granularity?: Granularity }, now = new Date()): UsageRange {
  const to = q.to_date !== undefined ? new Date(q.to_date) : now;
  const from = q.from_date !== undefined ? new Date(q.from_date) : new Date(to.getTime() - 30 * DAY_MS);
  if (Number.isNaN(to.getTime())) return { error: 'to_date is not a valid ISO 8601 date-time' };
  if (Number.isNaN(from.getTime())) return { error: 'from_date is not a valid ISO 8601 date-time' };
  if (from >= to) return { error: 'from_date must be before to_date' };
  if (from < EARLIEST_HISTORY) return { error: EARLIEST_HISTORY_MESSAGE };
  const granularity = q.granularity ?? 'day';
  if ((to.getTime() - from.getTime()) / 3_600_000 / periodHours[granularity] > MAX_PERIODS) {
    return { error: `The range holds more than ${MAX_PERIODS} periods of one ${granularity}; choose a longer granularity` };
  }
  return { from, to, granularity };
}

export function billingHandlers({ db, config, cluster }: { db: Db; config: ServiceConfig; cluster: Pick<ClusterNode, 'capacity'> }): BillingHandlers {
  return {
    async getBilling(req, ctx) {
      const q = req.query;
      const wantsUsage = q.from_date !== undefined || q.to_date !== undefined || q.granularity !== undefined;
      const range = wantsUsage ? usageRange(q) : undefined;
      if (range && 'error' in range) return fail(400, range.error);
      // MAX_CONCURRENT_BROWSERS is per node: a project without a cap of its own may fill
      // every node of a cluster (placement sends a session where there is room).
      const capacity = await cluster.capacity();
      const a = await account(db, ctx.projectId, { ...config, maxConcurrentBrowsers: capacity ?? config.maxConcurrentBrowsers });
      if (!a) return fail(401, 'Unknown project');
      const data = {
        credits: a.credits,
        credits_used: a.creditsUsed,
        included_credits: a.includedCredits,
        billing_period: { start: a.period.start.toISOString(), end: a.period.end.toISOString() },
        tier: a.tier,
        max_concurrent_browsers: a.maxConcurrentBrowsers,
        cost_limit: a.costLimit,
      };
      if (!range) return { status: 200, body: { data } };
      const buckets = await historyBuckets(db, ctx.projectId, range.from, range.to, range.granularity);
      return {
        status: 200,
        body: {
          data: {
            ...data,
            usage: {
              granularity: range.granularity,
              from_date: range.from.toISOString(),
              to_date: range.to.toISOString(),
              buckets: buckets.map((b) => ({ start: b.date.toISOString(), credits_used: b.credits_used })),
            },
          },
        },
      };
    },
  };
}
