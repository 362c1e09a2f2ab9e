// Runs a login in a page of the session's browser (Playwright over the browser's own CDP
// endpoint), and tells how it ended: signed in, the site refused the credentials (the
// flow's failure condition), or anything else. A login that needs a human (a captcha, a
// one-time code without a secret) asks one through an intervention, and fails when no one
// answers. Also checks whether a page is still signed in.
import type { Page } from 'playwright-core';
import { totp, type PlainCredentials } from './credentials.js';
import { DEFAULT_SELECTORS, type Condition, type LoginPlan, type Step } from './flows.js';
import type { FailureReason, FailureType } from './store.js';

/** A failure names its type (the vendor's two), and what the login met when it can tell (`reason`). */
export type LoginOutcome = { ok: true } | { ok: false; failureType: FailureType; message: string; reason?: FailureReason; screenshot?: Buffer };

/** Asks a person (an intervention): the one-time code, or `done` after taking over the page; throws when no one answers. */
export type AskHuman = (message: string, inputType: 'otp' | 'takeover') => Promise<string>;

/** Failure happened in a way worth naming; everything else is reported as automation_failure. */
export class LoginFailure extends Error {
  constructor(
    readonly failureType: FailureType,
    message: string,
    readonly reason?: FailureReason,
  ) {
    super(message);
  }
}

const POLL_MS = 200;
/** A refused password, when the flow does not say how its site words it. */
export const DEFAULT_REFUSAL =
  /\b(invalid|incorrect|wrong|bad|unknown)\b[^.\n]{0,40}\b(password|credentials|user ?name|e-?mail|login|code)\b|\b(password|credentials|user ?name|code)\b[^.\n]{0,40}\b(is )?(invalid|incorrect|wrong|not (correct|recognized|valid))\b/i;
const CAPTCHA = 'iframe[src*="recaptcha"], iframe[src*="hcaptcha"], iframe[src*="challenges.cloudflare.com"], .g-recaptcha, .h-captcha, .cf-turnstile';

export async function runLogin(page: Page, plan: LoginPlan, creds: PlainCredentials, ask: AskHuman): Promise<LoginOutcome> {
  page.setDefaultTimeout(plan.timeoutMs);
  const finished = () =>
    until(page, plan.timeoutMs, 'the success condition', async () => {
      if (await refused(page, plan.failure))
        throw new LoginFailure('invalid_credentials', `The site refused the credentials (${await refusalText(page, plan.failure)})`, 'wrong_password');
      return met(page, plan, plan.success);
    });
  try {
    for (const step of plan.steps) await perform(page, step, plan, creds, ask);
    await finished();
    return { ok: true };
  } catch (err) {
    if (err instanceof LoginFailure) return failed(err);
    // A step that timed out may have done so because the site refused the credentials.
    if (await refused(page, plan.failure).catch(() => false)) {
      return {
        ok: false,
        failureType: 'invalid_credentials',
        message: `The site refused the credentials (${await refusalText(page, plan.failure).catch(() => '')})`,
        reason: 'wrong_password',
      };
    }
    if (
      await page
        .locator(CAPTCHA)
        .count()
        .catch(() => 0)
    ) {
      // A person takes over the page, solves it and signs in; then the flow's success condition decides.
      try {
        await ask('The login shows a captcha: take over the page, complete the sign-in, then press Done', 'takeover');
        await finished();
        return { ok: true };
      } catch (asked) {
        if (asked instanceof LoginFailure) return failed(asked);
        return { ok: false, failureType: 'automation_failure', message: `The login shows a captcha and needs a human: ${firstLine(asked)}`, reason: 'captcha' };
      }
    }
    const where = page.isClosed() ? '' : ` at ${page.url()}`;
    return { ok: false, failureType: 'automation_failure', message: `The login did not complete${where}: ${firstLine(err)}` };
  }
}

/** Whether the page is signed in: it opens the login URL, and the flow's success condition holds there (a signed-in user is sent on). */
export async function stillSignedIn(page: Page, plan: LoginPlan): Promise<boolean> {
  try {
    await page.goto(plan.loginUrl, { timeout: plan.timeoutMs });
    return await until(page, Math.min(plan.timeoutMs, 10_000), 'signed-in page', async () => {
      if (await met(page, plan, plan.success)) return true;
      // The login form is there: signed out.
      if (await visible(page, DEFAULT_SELECTORS.password)) throw new LoginFailure('automation_failure', 'signed out');
      return false;
    });
  } catch {
    return false;
  }
}

async function perform(page: Page, step: Step, plan: LoginPlan, creds: PlainCredentials, ask: AskHuman): Promise<void> {
  switch (step.action) {
    case 'goto':
      await page.goto(step.url!, { timeout: plan.timeoutMs });
      return;
    case 'fill': {
      const value = fillValue(step.value!, creds);
      // Credentials are typed only on the application's hosts: a login that went elsewhere
      // (a lookalike, an open redirect) does not get them.
      if (value.secret) assertAllowedHost(page, plan);
      await field(page, step.selector!).fill(value.text);
      return;
    }
    case 'click':
      await field(page, step.selector!).click();
      return;
    case 'wait_for_url':
      await until(page, plan.timeoutMs, `a URL containing ${step.url_contains}`, async () => page.url().includes(step.url_contains!));
      return;
    case 'wait_for_selector':
      await field(page, step.selector!).waitFor({ state: 'visible' });
      return;
    case 'totp': {
      const input = field(page, step.selector!);
      await input.waitFor({ state: 'visible' });
      assertAllowedHost(page, plan);
      let code: string;
      if (creds.totpSecret) code = await totp(creds.totpSecret);
      else {
        try {
          code = (await ask('The login asks for a one-time code and the identity has no authenticator secret: enter the code', 'otp')).trim();
        } catch (err) {
          throw new LoginFailure(
            'automation_failure',
            `The login asks for a one-time code and the identity has no authenticator secret: it needs a human: ${firstLine(err)}`,
            'needs_person',
          );
        }
      }
      await input.fill(code);
      return;
    }
    case 'choose_account': {
      if (!creds.username) throw new LoginFailure('automation_failure', "choose_account needs the identity's user name (a username_password credential)");
      const scope = step.selector ? page.locator(step.selector) : page.locator('body');
      await scope.getByText(creds.username, { exact: false }).filter({ visible: true }).first().click();
      return;
    }
  }
}

const failed = (err: LoginFailure): LoginOutcome => ({
  ok: false,
  failureType: err.failureType,
  message: err.message,
  ...(err.reason ? { reason: err.reason } : {}),
});

function fillValue(template: string, creds: PlainCredentials): { text: string; secret: boolean } {
  let secret = false;
  const text = template.replace(/\{\{\s*(username|password|custom\.([^}\s]+))\s*\}\}/g, (_m, what: string, custom: string | undefined) => {
    secret = true;
    const value = custom !== undefined ? creds.custom[custom] : creds[what as 'username' | 'password'];
    if (value === undefined) {
      const needs = custom !== undefined ? `the custom field ${custom}` : 'a username_password credential';
      throw new LoginFailure('automation_failure', `The login needs ${needs}, which the identity does not have`);
    }
    return value;
  });
  return { text, secret };
}

/** Throws unless the page (or frame) is on a host where the application's credentials may be typed. */
export function assertAllowedHost(page: Pick<Page, 'url'>, plan: LoginPlan): void {
  const host = new URL(page.url()).hostname.toLowerCase();
  if (!plan.allowedHosts.has(host)) {
    throw new LoginFailure(
      'automation_failure',
      `The login went to ${host}, where this application's credentials may not be entered (add it to allowed_domains if it is the application's)`,
    );
  }
}

/** The first visible element a selector matches (the usual-field selectors match several). */
const field = (page: Page, selector: string) => page.locator(selector).filter({ visible: true }).first();

const visible = async (page: Page, selector: string) => (await page.locator(selector).filter({ visible: true }).count()) > 0;

export async function met(page: Page, plan: LoginPlan, c: Condition | undefined): Promise<boolean> {
  if (!c) {
    // The default: the page left the login URL and asks for no password or code.
    const now = new URL(page.url());
    const login = new URL(plan.loginUrl);
    if (now.origin === login.origin && now.pathname === login.pathname) return false;
    return !(await visible(page, DEFAULT_SELECTORS.password)) && !(await visible(page, DEFAULT_SELECTORS.totp));
  }
  if (c.url_contains && !page.url().includes(c.url_contains)) return false;
  if (c.selector && !(await visible(page, c.selector))) return false;
  if (c.text && !(await bodyText(page)).includes(c.text)) return false;
  return true;
}

export async function refused(page: Page, failure: Condition | undefined): Promise<boolean> {
  if (page.isClosed()) return false;
  if (failure) return met(page, { loginUrl: 'about:blank' } as LoginPlan, failure);
  return DEFAULT_REFUSAL.test(await bodyText(page));
}

export async function refusalText(page: Page, failure: Condition | undefined): Promise<string> {
  if (failure?.text) return `the page says "${failure.text}"`;
  // The line that says so, as the site words it (sign-in.ts takes out what was typed).
  const line = (await bodyText(page)).split('\n').find((l) => DEFAULT_REFUSAL.test(l));
  return line ? `the page says "${line.trim().slice(0, 200)}"` : "the flow's failure condition holds";
}

async function bodyText(page: Page): Promise<string> {
  return page
    .locator('body')
    .innerText({ timeout: 1_000 })
    .catch(() => '');
}

/** Polls `check` until it answers true (resolves true) or the time is up (throws). */
async function until(page: Page, timeoutMs: number, what: string, check: () => Promise<boolean>): Promise<true> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A navigation in progress makes reads fail for a moment: they count as not yet.
    if (await check().catch((err: unknown) => (err instanceof LoginFailure ? Promise.reject(err) : false))) return true;
    if (Date.now() >= deadline) throw new Error(`${what} did not happen within ${Math.round(timeoutMs / 1000)} s`);
    if (page.isClosed()) throw new Error('the page was closed');
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

export function firstLine(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n')[0]!;
}
