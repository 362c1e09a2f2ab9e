// The `auto` login: no steps written by anyone. It opens the login page and, at each look
// (page-look.ts), answers what the page asks with what belongs to the identity: the user
// name, the password, a one-time code (its authenticator's, or a person's through an
// intervention when the code was sent elsewhere), "stay signed in?", the account to choose,
// a cookie wall; a captcha is left to the session's solver first, then to a person. It goes
// on until the page shows nothing more to answer, or a failure it can name, within the
// flow's time limit. Credentials are typed only into fields of the application's hosts. A
// page the rules do not understand goes to the login agent when the operator configured a
// model (agent/login-agent.ts): it sees the credentials by name only, and a sign-in it
// claims is checked here like the rules' own.
import type { Frame, Page } from 'playwright-core';
import type { Logger } from 'pino';
import type { LoginAgent } from '../agent/index.js';
import { ConsentTracker } from '../page/consent.js';
import { totp, type PlainCredentials } from './credentials.js';
import type { LoginPlan } from './flows.js';
import { assertAllowedHost, DEFAULT_REFUSAL, firstLine, LoginFailure, met, refused, refusalText, type AskHuman, type LoginOutcome } from './login.js';
import { lookAt, MARK, type Mark, type PageLook } from './page-look.js';

export interface AutoLoginOptions {
  /** The session solves captchas (`browser.captcha_solver`): it gets its chance before a person. */
  captchaSolver: boolean;
  /** Takes over a page the rules do not understand; undefined without a model. */
  agent: LoginAgent | undefined;
  log: Logger;
}

const POLL_MS = 100;
/** A page that shows nothing to answer this long, when nothing was typed yet, counts as signed in already. */
const SIGNED_IN_QUIET_MS = 1_500;
/** A login page that shows nothing the rules know this long is an unknown page. */
const UNKNOWN_QUIET_MS = 4_000;
/** How long an answered step may take to go away before the next look. */
const STEP_MS = 3_000;
/** How long the session's captcha solver gets before a person is asked. */
const SOLVER_MS = 30_000;
/** How often a page may ask for the same thing (an identifier-first site asks the user name twice at most). */
const MAX_ASKED: Record<Mark, number> = { username: 3, password: 2, code: 2, submit: 0, stay: 2, account: 2 };

const LOCKED =
  /\baccount\b[^.\n]{0,40}\b(locked|disabled|suspended|blocked)\b|too many (failed |unsuccessful )?(attempts|tries|sign-in attempts)|temporarily (locked|blocked)/i;
const CODE_REFUSED =
  /\b(code|otp|token|passcode)\b[^.\n]{0,40}\b(invalid|incorrect|wrong|expired|not valid|not correct)\b|\b(invalid|incorrect|wrong|expired)\b[^.\n]{0,40}\b(code|otp|token|passcode)\b/i;

export async function runAutoLogin(page: Page, plan: LoginPlan, creds: PlainCredentials, ask: AskHuman, o: AutoLoginOptions): Promise<LoginOutcome> {
  const deadline = Date.now() + plan.timeoutMs;
  const left = () => Math.max(1, deadline - Date.now());
  page.setDefaultTimeout(plan.timeoutMs);
  const asked: Record<Mark, number> = { username: 0, password: 0, code: 0, submit: 0, stay: 0, account: 0 };
  const typed = () => asked.username + asked.password + asked.code > 0;
  let consentTried = false;
  let quietSince: number | undefined;
  try {
    await page.goto(plan.loginUrl, { timeout: plan.timeoutMs });
    for (;;) {
      if (Date.now() >= deadline) {
        throw new LoginFailure('automation_failure', `The login did not finish within ${Math.round(plan.timeoutMs / 1000)} s (at ${page.url()})`, 'timeout');
      }
      const look = await lookAt(page, creds.username ?? '');
      await refusedBy(page, plan, look, asked);
      if (plan.success && (await met(page, plan, plan.success).catch(() => false))) return { ok: true };
      const m = look.marks;
      const answerable = m.some((x) => x !== 'submit');
      if (!answerable && !look.captcha) {
        quietSince ??= Date.now();
        const quiet = Date.now() - quietSince;
        const onLoginPage = samePage(page.url(), plan.loginUrl);
        if (!plan.success && !onLoginPage && look.unknownInputs === 0 && (typed() || quiet >= SIGNED_IN_QUIET_MS)) return { ok: true };
        if (quiet >= UNKNOWN_QUIET_MS && (onLoginPage || look.unknownInputs > 0)) {
          if (look.consent && !consentTried) {
            consentTried = true;
            await dismissConsent(page, deadline, o.log);
            continue;
          }
          return await notUnderstood(page, look, plan, creds, ask, o, left);
        }
        await page.waitForTimeout(POLL_MS);
        continue;
      }
      quietSince = undefined;
      if (look.captcha) {
        await passCaptcha(page, creds, ask, o, left);
        continue;
      }
      if (look.consent && !consentTried) {
        consentTried = true;
        await dismissConsent(page, deadline, o.log);
        continue;
      }
      const step: Mark = m.includes('password')
        ? 'password'
        : m.includes('code')
          ? 'code'
          : m.includes('username')
            ? 'username'
            : m.includes('stay')
              ? 'stay'
              : 'account';
      if (++asked[step] > MAX_ASKED[step]) {
        return await notUnderstood(page, look, plan, creds, ask, o, left, `The login asks for the ${NAMES[step]} again without saying why`);
      }
      await answer(look.frame, step, look, plan, creds, ask);
      await settled(look.frame, step, Math.min(STEP_MS, left()));
    }
  } catch (err) {
    if (err instanceof LoginFailure) return { ok: false, failureType: err.failureType, message: err.message, ...(err.reason ? { reason: err.reason } : {}) };
    if (Date.now() >= deadline) {
      return {
        ok: false,
        failureType: 'automation_failure',
        message: `The login did not finish within ${Math.round(plan.timeoutMs / 1000)} s: ${firstLine(err)}`,
        reason: 'timeout',
      };
    }
    const where = page.isClosed() ? '' : ` at ${page.url()}`;
    return { ok: false, failureType: 'automation_failure', message: `The login did not complete${where}: ${firstLine(err)}` };
  }
}

const NAMES: Record<Mark, string> = {
  username: 'user name',
  password: 'password',
  code: 'one-time code',
  submit: 'submit',
  stay: '"stay signed in?" answer',
  account: 'account',
};

/** Whether two URLs are the same page (origin and path). */
function samePage(a: string, b: string): boolean {
  try {
    const x = new URL(a);
    const y = new URL(b);
    return x.origin === y.origin && x.pathname.replace(/\/$/, '') === y.pathname.replace(/\/$/, '');
  } catch {
    return false;
  }
}

/** Throws the failure the page names, once something was typed: a locked account, a refused code or password. */
async function refusedBy(page: Page, plan: LoginPlan, look: PageLook, asked: Record<Mark, number>): Promise<void> {
  if (asked.username + asked.password + asked.code === 0) return;
  const line = (re: RegExp) =>
    look.text
      .split('\n')
      .find((l) => re.test(l))
      ?.trim()
      .slice(0, 200);
  const locked = line(LOCKED);
  if (locked) throw new LoginFailure('automation_failure', `The account is locked (the page says "${locked}")`, 'account_locked');
  if (asked.code > 0 && look.marks.includes('code')) {
    const said = line(CODE_REFUSED) ?? line(DEFAULT_REFUSAL);
    if (said) throw new LoginFailure('invalid_credentials', `The site refused the one-time code (the page says "${said}")`, 'wrong_code');
  }
  if (asked.code === 0 && (plan.failure ? await refused(page, plan.failure) : DEFAULT_REFUSAL.test(look.text))) {
    const said = plan.failure ? await refusalText(page, plan.failure) : `the page says "${line(DEFAULT_REFUSAL)}"`;
    throw new LoginFailure('invalid_credentials', `The site refused the credentials (${said})`, 'wrong_password');
  }
}

/** Fills what the step asks and submits it. */
async function answer(frame: Frame, step: Mark, look: PageLook, plan: LoginPlan, creds: PlainCredentials, ask: AskHuman): Promise<void> {
  const el = (m: Mark) => frame.locator(`[${MARK}="${m}"]`);
  const submit = async (field: Mark) => {
    if (look.marks.includes('submit')) await el('submit').click();
    else await el(field).press('Enter');
  };
  switch (step) {
    case 'password':
      if (!creds.password) throw new LoginFailure('automation_failure', 'The login asks for a password and the identity has none', 'needs_person');
      assertAllowedHost(frame, plan);
      if (look.marks.includes('username') && creds.username) await el('username').fill(creds.username);
      await el('password').fill(creds.password);
      return submit('password');
    case 'username':
      if (!creds.username) throw new LoginFailure('automation_failure', 'The login asks for a user name and the identity has none', 'needs_person');
      assertAllowedHost(frame, plan);
      await el('username').fill(creds.username);
      return submit('username');
    case 'code': {
      assertAllowedHost(frame, plan);
      await el('code').fill(await codeFor(look, creds, ask));
      return submit('code');
    }
    case 'stay':
    case 'account':
      await el(step).click();
      return;
    case 'submit':
      return;
  }
}

/** The one-time code: the authenticator's, unless the page sent one elsewhere (or there is no secret): then a person's. */
async function codeFor(look: PageLook, creds: PlainCredentials, ask: AskHuman): Promise<string> {
  if (creds.totpSecret && !look.codeSent) return totp(creds.totpSecret);
  const why = look.codeSent
    ? 'The login sent a one-time code (by e-mail, SMS or an app)'
    : 'The login asks for a one-time code and the identity has no authenticator secret';
  try {
    return (await ask(`${why}: enter the code`, 'otp')).trim();
  } catch (err) {
    throw new LoginFailure('automation_failure', `${why}: it needs a human: ${firstLine(err)}`, 'needs_person');
  }
}

/** Waits until the answered step goes (a new page, or the field hidden), bounded: the next look tells what came. */
async function settled(frame: Frame, step: Mark, timeoutMs: number): Promise<void> {
  if (frame.isDetached()) return;
  await frame
    .locator(`[${MARK}="${step}"]`)
    .waitFor({ state: 'hidden', timeout: timeoutMs })
    .catch(() => {});
}

/** The session's solver first (it works on the page by itself), then a person who takes over and presses Done. */
async function passCaptcha(page: Page, creds: PlainCredentials, ask: AskHuman, o: AutoLoginOptions, left: () => number): Promise<void> {
  if (o.captchaSolver) {
    const until = Date.now() + Math.min(SOLVER_MS, left());
    while (Date.now() < until) {
      if (!(await lookAt(page, creds.username ?? '')).captcha) return;
      await page.waitForTimeout(250);
    }
  }
  try {
    await ask('The login shows a captcha: take over the page, complete the sign-in, then press Done', 'takeover');
  } catch (err) {
    throw new LoginFailure('automation_failure', `The login shows a captcha and needs a human: ${firstLine(err)}`, 'captcha');
  }
  // The person signed in (or got past the captcha): the next look says which.
  await page.waitForLoadState('load', { timeout: left() }).catch(() => {});
  if ((await lookAt(page, creds.username ?? '')).captcha) {
    throw new LoginFailure(
      'automation_failure',
      'The login shows a captcha and needs a human: the captcha is still there after the person was done',
      'captcha',
    );
  }
}

async function dismissConsent(page: Page, deadline: number, log: Logger): Promise<void> {
  const tracker = await ConsentTracker.attach(page.context(), log);
  const { dismissed } = await tracker.settle(page, deadline, 5_000, true);
  log.debug({ dismissed }, 'login: consent dialog');
}

/**
 * A page the rules do not understand: the agent's, when there is one (its verdict named as the
 * rules name theirs, a sign-in it claims checked, a person asked where it says one is
 * needed); otherwise, or when it gives up, an unknown page.
 */
async function notUnderstood(
  page: Page,
  look: PageLook,
  plan: LoginPlan,
  creds: PlainCredentials,
  ask: AskHuman,
  o: AutoLoginOptions,
  left: () => number,
  why?: string,
): Promise<LoginOutcome> {
  if (!o.agent) return unknownPage(page, look, why);
  const secrets: Record<string, string> = {};
  if (creds.username) secrets.username = creds.username;
  if (creds.password) secrets.password = creds.password;
  if (creds.totpSecret) secrets.one_time_code = await totp(creds.totpSecret);
  const r = await o.agent({ page, loginUrl: plan.loginUrl, secrets, allowedHosts: plan.allowedHosts, timeoutMs: left() });
  o.log.info({ verdict: r.verdict, modelCalls: r.modelCalls }, 'login: the agent took a page the rules do not understand');
  const said = r.detail ? ` (the agent read: "${r.detail.slice(0, 200)}")` : '';
  const now = () => lookAt(page, creds.username ?? '');
  switch (r.verdict) {
    case 'signed_in':
      if (await met(page, plan, plan.success).catch(() => false)) return { ok: true };
      return unknownPage(page, await now(), 'The agent said the login was done, but the page is still the login');
    case 'wrong_password':
      return { ok: false, failureType: 'invalid_credentials', message: `The site refused the credentials${said}`, reason: 'wrong_password' };
    case 'wrong_code':
      return { ok: false, failureType: 'invalid_credentials', message: `The site refused the one-time code${said}`, reason: 'wrong_code' };
    case 'account_locked':
      return { ok: false, failureType: 'automation_failure', message: `The account is locked${said}`, reason: 'account_locked' };
    case 'captcha':
    case 'needs_person': {
      const reason = r.verdict;
      try {
        await ask(`The login needs a person${said}: take over the page, complete the sign-in, then press Done`, 'takeover');
      } catch (err) {
        throw new LoginFailure('automation_failure', `The login needs a human${said}: ${firstLine(err)}`, reason);
      }
      await page.waitForLoadState('load', { timeout: left() }).catch(() => {});
      if (await met(page, plan, plan.success).catch(() => false)) return { ok: true };
      return unknownPage(page, await now(), 'The login is not done after the person was');
    }
    case 'gave_up':
      return unknownPage(page, await now(), `${why ?? 'The login stopped on a page it does not know how to answer'} (${r.detail.slice(0, 200)})`);
  }
}

async function unknownPage(page: Page, look: PageLook, why?: string): Promise<LoginOutcome> {
  const screenshot = await page.screenshot({ type: 'png', timeout: 5_000 }).catch(() => undefined);
  const title = (await page.title().catch(() => '')).slice(0, 100);
  return {
    ok: false,
    failureType: 'automation_failure',
    message: `${why ?? 'The login stopped on a page it does not know how to answer'} (at ${page.url()}${title ? `, "${title}"` : ''}${look.unknownInputs ? `, ${look.unknownInputs} unknown fields` : ''})`,
    reason: 'unknown_page',
    ...(screenshot ? { screenshot } : {}),
  };
}
