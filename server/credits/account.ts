// A project's credit account: what it may spend and what it has spent. Derived on demand
// from the project row (tier, gift), the configuration (included credits, cost limit) and
// the usage ledger; nothing here is stored.
//
// Rules (docs/billing.md):
// - The billing period is the calendar month in UTC.
// - Included credits renew each period: the project's own included_credits when the
//   operator set one (admin API), else INCLUDED_CREDITS for a project of tier 'self-hosted'
//   (every project the operator makes), none for tier 'agent-access' (a project made
//   through the agent-access flow lives on its gift). The cost limit likewise: the
//   project's cost_limit, else COST_LIMIT.
// - Gift credits (projects.gift_credits) are granted once; a period's usage beyond its
//   included credits spends them.
// - Balance = included credits left this period + gift credits left. It can go below zero
//   when a session settles for more than was left; creation is refused from zero on, and
//   also once the period's usage reaches COST_LIMIT when one is set.
import type { Config } from '../config/config.js';
import type { Db } from '../store/db.js';
import { usageByMonth } from './ledger.js';
import { roundCredits } from './prices.js';

export const AGENT_ACCESS_TIER = 'agent-access';

export interface BillingPeriod {
  start: Date;
  end: Date;
}

export interface Account {
  /** Credits available now. */
  credits: number;
  /** Credits used in the current period (sessions settled in it and web fetches). */
  creditsUsed: number;
  includedCredits: number;
  giftCredits: number;
  period: BillingPeriod;
  tier: string;
  maxConcurrentBrowsers: number;
  costLimit: number | null;
}

type BillingConfig = Pick<Config, 'includedCredits' | 'costLimit' | 'maxConcurrentBrowsers'>;

/** The calendar month (UTC) that holds `now`. */
export function billingPeriod(now: Date): BillingPeriod {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end };
}

export function includedCreditsFor(tier: string, config: Pick<Config, 'includedCredits'>, own: number | null = null): number {
  if (own !== null) return own;
  return tier === AGENT_ACCESS_TIER ? 0 : config.includedCredits;
}

export async function account(db: Db, projectId: string, config: BillingConfig, now = new Date()): Promise<Account | undefined> {
  const [project] = await db.query<{
    tier: string;
    gift_credits: number;
    included_credits: number | null;
    cost_limit: number | null;
    max_concurrent_browsers: number | null;
  }>('SELECT tier, gift_credits, included_credits, cost_limit, max_concurrent_browsers FROM projects WHERE id = $1', [projectId]);
  if (!project) return undefined;
  const included = includedCreditsFor(project.tier, config, project.included_credits);
  const period = billingPeriod(now);
  let current = 0;
  let giftSpent = 0;
  for (const m of await usageByMonth(db, projectId)) {
    const month = new Date(m.month);
    if (month.getTime() > period.start.getTime()) continue;
    if (month.getTime() === period.start.getTime()) current = m.credits;
    giftSpent += Math.max(0, m.credits - included);
  }
  const giftLeft = project.gift_credits - giftSpent;
  return {
    credits: roundCredits(Math.max(0, included - current) + giftLeft),
    creditsUsed: roundCredits(current),
    includedCredits: included,
    giftCredits: project.gift_credits,
    period,
    tier: project.tier,
    // The project's own cap when set: it is the limit this project meets first.
    maxConcurrentBrowsers: project.max_concurrent_browsers ?? config.maxConcurrentBrowsers,
    costLimit: project.cost_limit ?? config.costLimit,
  };
}

/** Why the project may not start paid work now (the 402 message), or undefined. */
export async function refuseUnpaid(db: Db, projectId: string, config: BillingConfig): Promise<string | undefined> {
  const a = await account(db, projectId, config);
  if (!a) return undefined;
  if (a.credits <= 0) return `Insufficient credits: the balance is ${a.credits}`;
  if (a.costLimit !== null && a.creditsUsed >= a.costLimit) {
    return `Insufficient credits: this billing period's usage (${a.creditsUsed}) reached the cost limit of ${a.costLimit}`;
  }
  return undefined;
}
