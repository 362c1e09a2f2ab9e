// One session's life as a client lives it, for the benchmarks that time it against raw
// Playwright: create → connectOverCDP → goto a page → end. `request` sends an API request
// with the key (to one server, or to a cluster's front).
import { chromium } from 'playwright-core';

export type ApiRequest = (path: string, init?: RequestInit) => Promise<Response>;

export async function sessionLife(request: ApiRequest, body: object, pageUrl: string): Promise<void> {
  const res = await request('/v1/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const created = (await res.json()) as { data: { id: string; cdp_url: string } };
  if (res.status !== 200) throw new Error(`create answered ${res.status}: ${JSON.stringify(created)}`);
  const browser = await chromium.connectOverCDP(created.data.cdp_url);
  const context = browser.contexts()[0];
  const p = context.pages()[0] ?? (await context.newPage());
  await p.goto(pageUrl);
  await browser.close();
  const end = await request(`/v1/sessions/${created.data.id}`, { method: 'DELETE' });
  if (end.status !== 200) throw new Error(`end answered ${end.status}`);
}
