// The price table: what a session costs, in credits. Sessions are settled when they end,
// from their duration (created_at to ended_at), the bytes that went through their proxy and
// the screenshots taken over CDP. A web fetch costs a fixed amount per 200 answer.
// docs/billing.md documents the same table.
import type { Config } from '../config/config.js';

export interface PriceTable {
  /** Credits per minute a session's browser exists (fractions of a minute count pro rata). */
  perBrowserMinute: number;
  /** Credits per gigabyte (10^9 bytes) through the session's proxy. */
  perProxyGb: number;
  /** Credits per screenshot (Page.captureScreenshot over CDP). */
  perScreenshot: number;
}

/** The contract (openapi.yaml, the web fetch tool): 0.005 credits per web fetch answered 200; 4xx and 5xx are free. */
export const FETCH_CREDITS = 0.005;

export function priceTable(config: Pick<Config, 'pricePerBrowserMinute' | 'pricePerProxyGb' | 'pricePerScreenshot'>): PriceTable {
  return { perBrowserMinute: config.pricePerBrowserMinute, perProxyGb: config.pricePerProxyGb, perScreenshot: config.pricePerScreenshot };
}

export interface SessionUsage {
  /** Milliseconds from creation to end; 0 for a session whose browser never ran. */
  durationMs: number;
  proxyBytes: number;
  screenshots: number;
}

/** Credits are kept to a millionth, so sums of many sessions stay exact enough to compare. */
export const roundCredits = (n: number) => Math.round(n * 1e6) / 1e6;

export function sessionCredits(usage: SessionUsage, prices: PriceTable): number {
  const minutes = Math.max(0, usage.durationMs) / 60_000;
  const gb = Math.max(0, usage.proxyBytes) / 1e9;
  return roundCredits(minutes * prices.perBrowserMinute + gb * prices.perProxyGb + Math.max(0, usage.screenshots) * prices.perScreenshot);
}
