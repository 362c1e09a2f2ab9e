// Shared by the profiles tests: the fixture site's sign-in (a session cookie, a persistent
// cookie, local storage and IndexedDB) done and read back through Playwright over cdp_url,
// and the profile calls of the API.
import { chromium } from 'playwright-core';
import { expect } from 'vitest';
import { eventually, startPageServer, type PageServer, type Requester } from '../sessions/test-support.js';

export { startPageServer, type PageServer };

export interface SignedInState {
  cookies: string;
  user: string | null;
  cart: string | null;
}

export const SIGNED_IN = {
  cookies: expect.stringMatching(/(?=.*sid=session-cookie-value)(?=.*remember=persistent-cookie-value)/),
  user: 'test-buyer',
  cart: 'cart-42',
};

/** Signs in to the fixture site in the session's first tab, as a user's script would. */
export async function signIn(pages: PageServer, cdpUrl: string, extra?: string): Promise<void> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(pages.url('/login'));
    await page.waitForFunction(() => (window as any).signedIn === true, undefined, { timeout: 10_000 });
    if (extra) await page.evaluate((v) => localStorage.setItem('extra', v), extra);
  } finally {
    await browser.close();
  }
}

/** What the fixture site finds of a sign-in in the session, and its open tabs. */
export async function stateOf(pages: PageServer, cdpUrl: string): Promise<SignedInState & { extra: string | null; tabs: number; viewport: number[] }> {
  const browser = await chromium.connectOverCDP(cdpUrl);
  try {
    const context = browser.contexts()[0]!;
    const tabs = context.pages().length;
    const page = context.pages()[0]!;
    await page.goto(pages.url('/account'));
    await page.waitForFunction(() => (window as any).state !== undefined, undefined, { timeout: 10_000 });
    return {
      ...(await page.evaluate(() => (window as any).state as SignedInState)),
      extra: await page.evaluate(() => localStorage.getItem('extra')),
      tabs,
      viewport: await page.evaluate(() => [innerWidth, innerHeight]),
    };
  } finally {
    await browser.close();
  }
}

export async function call(server: Requester, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await server.request(path, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
  return { status: res.status, body: await res.json() };
}

export const makeProfile = (server: Requester, name: string, sessionId: string, extra: object = {}) =>
  call(server, 'POST', '/v1/profiles', { name, source: 'session', session_id: sessionId, ...extra });

export const profile = async (server: Requester, name: string) => (await call(server, 'GET', `/v1/profiles/${encodeURIComponent(name)}`)).body.data;

export const settled = (server: Requester, name: string) =>
  eventually(
    async () => {
      const p = await profile(server, name);
      return p && p.status !== 'pending' ? p : undefined;
    },
    30_000,
    `profile ${name} to be saved`,
  );
