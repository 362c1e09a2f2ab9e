// Bot-detection interstitials: recognise a challenge page, and wait (or work) through it
// until the real page arrives. A challenge page is never returned: when it does not clear in
// time the request fails instead.
//
// Three kinds:
//  - 'wait': a JavaScript check that clears by itself (Cloudflare's "Just a moment…",
//    DDoS-Guard, Sucuri, Imperva, Akamai, AWS WAF, Kasada, Vercel, Anubis…): the browser
//    passes it by running it; we wait for the navigation it ends with;
//  - 'pow': a proof-of-work captcha widget (ALTCHA, Friendly Captcha, Cap, mCaptcha): it is
//    solved by running it, so it is started (its checkbox or button clicked) and waited for;
//  - 'captcha': reCAPTCHA, hCaptcha or Turnstile on an interstitial: solved by the
//    configured captcha-solving service (captcha-adapter.ts), the token put where the widget
//    would put it, then the widget's callback called or its form submitted.
//
// The pass works on a ChallengePage: a Playwright page (the tools' own browsers,
// playwrightPage below) or a page of a session's browser followed over the server's own CDP
// connection (session-captcha/), where a second Playwright client would disturb the user's.
import type { Page } from 'playwright-core';
import type { Logger } from 'pino';
import type { CaptchaKind, CaptchaSolver } from './captcha-adapter.js';
import { inPage } from './in-page.js';
import { isNavigationError } from './readiness.js';

export interface DetectedChallenge {
  vendor: string;
  kind: 'wait' | 'pow' | 'captcha';
  captcha?: { kind: CaptchaKind; sitekey: string; action?: string; data?: string; invisible?: boolean };
}

export class ChallengeError extends Error {
  constructor(
    readonly status: 502 | 504,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Runs in the page. `statusHint` is the HTTP status of the document: interstitials answer
 * 403, 429 or 503; below 0, the page's navigation timing says it. Captcha widgets count as a
 * challenge only on an interstitial-like page (a hint status, a known vendor, or little else
 * on the page), not in an ordinary form.
 */
function detectInPage(statusHint: number): DetectedChallenge | null {
  const doc = document;
  if (statusHint < 0) {
    const nav = performance.getEntriesByType('navigation')[0] as (PerformanceEntry & { responseStatus?: number }) | undefined;
    statusHint = nav?.responseStatus ?? 0;
  }
  const title = (doc.title || '').trim();
  const html = doc.documentElement ? doc.documentElement.outerHTML.slice(0, 200_000) : '';
  const text = (doc.body ? doc.body.innerText || '' : '').trim();
  const has = (sel: string) => {
    try {
      return !!doc.querySelector(sel);
    } catch {
      return false;
    }
  };
  const scriptSrc = (re: RegExp) => Array.from(doc.scripts).some((s) => re.test(s.src || ''));
  const iframeSrc = (re: RegExp) => Array.from(doc.querySelectorAll('iframe')).some((f) => re.test((f as HTMLIFrameElement).src || ''));

  // Proof-of-work widgets: solved by running.
  if (has('altcha-widget')) return { vendor: 'ALTCHA', kind: 'pow' };
  if (has('.frc-captcha')) return { vendor: 'Friendly Captcha', kind: 'pow' };
  if (has('cap-widget')) return { vendor: 'Cap', kind: 'pow' };
  if (iframeSrc(/mcaptcha/i) || has('#mcaptcha__token')) return { vendor: 'mCaptcha', kind: 'pow' };

  const vendorOf = (): string | null => {
    if (
      /^(just a moment|attention required! \| cloudflare|one more step)/i.test(title) ||
      has('#challenge-form') ||
      has('#cf-challenge-running') ||
      has('#challenge-running') ||
      scriptSrc(/\/cdn-cgi\/challenge-platform\//) ||
      /window\._cf_chl_opt/.test(html)
    )
      return 'Cloudflare';
    if (/ddos-guard/i.test(title) || (/ddos-guard/i.test(html.slice(0, 20_000)) && /check/i.test(text))) return 'DDoS-Guard';
    if (/sucuri_cloudproxy_js|sucuri\.net\/privacy-policy/i.test(html) && text.length < 2000) return 'Sucuri';
    if (/_Incapsula_Resource|Incapsula incident ID/i.test(html) && text.length < 2000) return 'Imperva';
    if (has('#sec-if-cpt-container') || has('#sec-cpt-if') || (/bm-verify|_sec\/verify/i.test(html) && text.length < 2000)) return 'Akamai';
    if (iframeSrc(/captcha-delivery\.com/) || scriptSrc(/captcha-delivery\.com|ct\.captcha-delivery/) || /var dd=\{/.test(html)) return 'DataDome';
    if (has('#px-captcha') || (/_pxAppId|px-captcha/i.test(html) && text.length < 2000)) return 'PerimeterX';
    if (/AwsWafIntegration|awsWafCookieDomainList|gokuProps/.test(html)) return 'AWS WAF';
    if (/KPSDK/.test(html) && text.length < 2000) return 'Kasada';
    if (/^vercel security checkpoint/i.test(title)) return 'Vercel';
    if (has('#anubis_challenge') || /making sure you('|’)re not a bot/i.test(title)) return 'Anubis';
    if (
      text.length < 3000 &&
      (/^(please wait|checking your browser|one moment,? please|verifying (that )?you are (a )?human|security check|bot check|ddos protection)/i.test(title) ||
        /checking (if the site connection is secure|your browser before accessing)|verify(ing)? you are (a )?human|enable javascript and cookies to continue/i.test(
          text,
        ))
    ) {
      return 'Generic';
    }
    return null;
  };
  const vendor = vendorOf();

  // Captcha widgets.
  const widget = (sel: string, attr = 'data-sitekey') => {
    const el = doc.querySelector(sel);
    return el ? { el, sitekey: el.getAttribute(attr) || '' } : null;
  };
  const paramOf = (re: RegExp, name: string) => {
    for (const f of Array.from(doc.querySelectorAll('iframe'))) {
      const src = (f as HTMLIFrameElement).src || '';
      if (re.test(src)) {
        try {
          const u = new URL(src);
          const v = u.searchParams.get(name) || new URLSearchParams(u.hash.slice(1)).get(name);
          if (v) return v;
        } catch {
          // ignore
        }
      }
    }
    return '';
  };
  let captcha: DetectedChallenge['captcha'] | undefined;
  const ts = widget('.cf-turnstile[data-sitekey]');
  const hc = widget('.h-captcha[data-sitekey]');
  const rc = widget('.g-recaptcha[data-sitekey]');
  if (ts) {
    captcha = {
      kind: 'turnstile',
      sitekey: ts.sitekey,
      action: ts.el.getAttribute('data-action') || undefined,
      data: ts.el.getAttribute('data-cdata') || undefined,
    };
  } else if (hc) {
    captcha = { kind: 'hcaptcha', sitekey: hc.sitekey };
  } else if (rc) {
    captcha = { kind: 'recaptcha_v2', sitekey: rc.sitekey, invisible: rc.el.getAttribute('data-size') === 'invisible' };
  } else if (iframeSrc(/hcaptcha\.com/)) {
    captcha = { kind: 'hcaptcha', sitekey: paramOf(/hcaptcha\.com/, 'sitekey') };
  } else if (iframeSrc(/\/recaptcha\/(api2|enterprise)\/anchor/)) {
    captcha = { kind: 'recaptcha_v2', sitekey: paramOf(/\/recaptcha\//, 'k') };
  } else if (iframeSrc(/challenges\.cloudflare\.com/)) {
    captcha = { kind: 'turnstile', sitekey: paramOf(/challenges\.cloudflare\.com/, 'sitekey') };
  }
  // A widget already answered (its response field holds a token) asks nothing more: the page,
  // or a login filling its form, sends the token.
  const answered = Array.from(doc.querySelectorAll('[name="g-recaptcha-response"], [name="h-captcha-response"], [name="cf-turnstile-response"]')).some(
    (f) => (f as HTMLInputElement).value,
  );
  if (answered) captcha = undefined;
  const interstitial = vendor !== null || [403, 429, 503].includes(statusHint) || text.length < 1500;
  if (captcha && captcha.sitekey && interstitial) return { vendor: vendor ?? 'Captcha', kind: 'captcha', captcha };
  if (vendor) return { vendor, kind: 'wait' };
  return null;
}

/** Runs in the page: starts a proof-of-work widget. Answers whether something was clicked. */
function startPowInPage(): boolean {
  const click = (el: Element | null | undefined) => {
    if (!el) return false;
    (el as HTMLElement).click();
    return true;
  };
  const altcha = document.querySelector('altcha-widget') as (HTMLElement & { verify?: () => unknown }) | null;
  if (altcha) {
    if (typeof altcha.verify === 'function') {
      void altcha.verify();
      return true;
    }
    const root = altcha.shadowRoot ?? altcha;
    return click(root.querySelector('input[type="checkbox"]'));
  }
  const frc = document.querySelector('.frc-captcha');
  if (frc) return click(frc.querySelector('button.frc-button, button'));
  const cap = document.querySelector('cap-widget') as (HTMLElement & { solve?: () => unknown }) | null;
  if (cap) {
    if (typeof cap.solve === 'function') {
      void cap.solve();
      return true;
    }
    return click((cap.shadowRoot ?? cap).querySelector('.captcha, button, [role="button"]'));
  }
  return false;
}

/** Runs in the page: whether a started proof-of-work widget finished (its form can go). */
function powDoneInPage(): { done: boolean; submitted: boolean } {
  const widget = document.querySelector('altcha-widget, .frc-captcha, cap-widget');
  if (!widget) return { done: true, submitted: false };
  const field = (widget.closest('form') ?? document).querySelector(
    'input[name="altcha"], input[name="frc-captcha-solution"], input[name="frc-captcha-response"], input[name="cap-token"]',
  ) as HTMLInputElement | null;
  const api = widget as unknown as { getState?: () => string };
  const state = (typeof api.getState === 'function' ? api.getState() : '') || widget.getAttribute('data-state') || (widget as HTMLElement).dataset?.state || '';
  const value = field?.value ?? '';
  const done = /verified|done|solved/i.test(state) || (value !== '' && !/^\.?UNSTARTED|^\.?UNFINISHED|^\.?FETCHING/.test(value));
  return { done, submitted: false };
}

/** Runs in the page: submits the form around a finished widget (when the page does not itself). */
function submitAroundInPage(selector: string): boolean {
  const widget = document.querySelector(selector);
  const form = widget?.closest('form') as HTMLFormElement | null | undefined;
  if (!form) return false;
  if (typeof form.requestSubmit === 'function') form.requestSubmit();
  else form.submit();
  return true;
}

/** Runs in the page: puts a captcha token where the widget would, then calls back or submits. */
function applyTokenInPage(kind: CaptchaKind, token: string): string {
  const names =
    kind === 'turnstile' ? ['cf-turnstile-response'] : kind === 'hcaptcha' ? ['h-captcha-response', 'g-recaptcha-response'] : ['g-recaptcha-response'];
  const widgetSel = kind === 'turnstile' ? '.cf-turnstile' : kind === 'hcaptcha' ? '.h-captcha' : '.g-recaptcha';
  const widget = document.querySelector(widgetSel);
  const form = (widget?.closest('form') ?? document.querySelector('form')) as HTMLFormElement | null;
  for (const name of names) {
    let fields = Array.from(document.querySelectorAll(`[name="${name}"]`)) as HTMLInputElement[];
    if (fields.length === 0) {
      const t = document.createElement('textarea');
      t.name = name;
      t.style.display = 'none';
      (widget ?? form ?? document.body).appendChild(t);
      fields = [t as unknown as HTMLInputElement];
    }
    for (const f of fields) {
      f.value = token;
      f.dispatchEvent(new Event('input', { bubbles: true }));
      f.dispatchEvent(new Event('change', { bubbles: true }));
    }
  }
  const callbackName = widget?.getAttribute('data-callback');
  const w = window as unknown as Record<string, unknown>;
  if (callbackName) {
    const fn = callbackName.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], w);
    if (typeof fn === 'function') {
      (fn as (t: string) => void)(token);
      return 'callback';
    }
  }
  // A form that still asks for something a person types (a login's user name and password)
  // is not sent half empty, which would use the token up: whoever fills it sends it.
  const empty = (f: Element) => {
    const el = f as HTMLInputElement;
    const type = (el.getAttribute('type') || 'text').toLowerCase();
    if (el.tagName === 'INPUT' && ['hidden', 'submit', 'button', 'image', 'reset', 'checkbox', 'radio', 'file'].includes(type)) return false;
    if (names.includes(el.name) || el.disabled || el.readOnly || el.value) return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  };
  if (form && !Array.from(form.querySelectorAll('input, textarea')).some(empty)) {
    if (typeof form.requestSubmit === 'function') form.requestSubmit();
    else form.submit();
    return 'submitted';
  }
  return 'set';
}

/** What passing a challenge needs of a page. */
export interface ChallengePage {
  isClosed(): boolean;
  /** The main document's URL. */
  url(): string;
  /** Evaluates an expression (inPage) in the main frame; answers its value (a promise awaited). */
  evaluate(expression: string): Promise<unknown>;
  /** Resolves true when the main frame navigates within ms. */
  waitForMainNavigation(ms: number): Promise<boolean>;
  /** Waits, up to ms, for the main document's DOMContentLoaded (at once when it has fired). */
  waitForDomContentLoaded(ms: number): Promise<void>;
}

/** A Playwright page as a ChallengePage. */
export function playwrightPage(page: Page): ChallengePage {
  return {
    isClosed: () => page.isClosed(),
    url: () => page.url(),
    evaluate: (expression) => page.evaluate(expression),
    waitForMainNavigation: (ms) =>
      page
        .waitForEvent('framenavigated', { predicate: (f) => f === page.mainFrame(), timeout: ms })
        .then(() => true)
        .catch(() => false),
    waitForDomContentLoaded: (ms) => page.waitForLoadState('domcontentloaded', { timeout: ms }).catch(() => {}),
  };
}

export interface PassOptions {
  deadline: number;
  /** Total time limit, for messages. */
  timeoutSeconds: number;
  /** The HTTP status of the current main document, kept up to date by the caller; left out, the page's navigation timing says. */
  status?: () => number;
  solver?: CaptchaSolver;
  log: Logger;
  /** What a look at the page just made (challengeProbe) found; undefined: none was made. */
  first?: DetectedChallenge | null;
}

/**
 * The detection as an in-page expression, for a caller that looks at the page in one go.
 * `status`: the document's HTTP status; left out, the page's navigation timing says.
 */
export function challengeProbe(status = -1): string {
  return inPage(detectInPage, status);
}

async function detectChallenge(page: ChallengePage, status: number): Promise<DetectedChallenge | null> {
  return (await page.evaluate(challengeProbe(status))) as DetectedChallenge | null;
}

/**
 * Passes whatever challenge the page shows, until the page is not a challenge. Resolves with
 * the vendors passed (empty when there was none); throws ChallengeError when it cannot.
 */
export async function passChallenges(page: ChallengePage, options: PassOptions): Promise<string[]> {
  const passed: string[] = [];
  const solvedKeys = new Set<string>();
  let powStarted = false;
  let powSubmitted = false;
  let seen: DetectedChallenge | null = null;
  let first = options.first;
  for (;;) {
    if (page.isClosed()) throw new ChallengeError(502, 'Upstream error: the page closed itself');
    let found: DetectedChallenge | null;
    try {
      found = first !== undefined ? first : await detectChallenge(page, options.status?.() ?? -1);
      first = undefined;
    } catch (err) {
      if (!isNavigationError(err)) throw err;
      await settleNavigation(page, options.deadline);
      continue;
    }
    if (!found) {
      if (seen) options.log.debug({ vendor: seen.vendor }, 'challenge passed');
      return passed;
    }
    if (!seen || seen.vendor !== found.vendor) {
      options.log.debug({ vendor: found.vendor, kind: found.kind }, 'bot-detection challenge found');
      passed.push(found.vendor);
    }
    seen = found;
    if (Date.now() >= options.deadline) {
      throw new ChallengeError(504, `Upstream timed out after ${options.timeoutSeconds} seconds: the ${found.vendor} bot-detection challenge did not clear`);
    }

    try {
      if (found.kind === 'pow') {
        if (!powStarted) powStarted = (await page.evaluate(inPage(startPowInPage))) as boolean;
        const state = (await page.evaluate(inPage(powDoneInPage))) as { done: boolean };
        if (state.done && !powSubmitted) {
          // Give the page a moment to go on by itself, then submit the form it sits in.
          const navigated = await waitForMainNavigation(page, Math.min(1000, options.deadline - Date.now()));
          if (!navigated) {
            powSubmitted = (await page.evaluate(inPage(submitAroundInPage, 'altcha-widget, .frc-captcha, cap-widget'))) as boolean;
          }
          continue;
        }
      } else if (found.kind === 'captcha' && found.captcha) {
        const c = found.captcha;
        const key = `${c.kind}:${c.sitekey}:${page.url()}`;
        if (!solvedKeys.has(key)) {
          if (!options.solver) {
            throw new ChallengeError(502, `Upstream error: the page asks for a ${captchaName(c.kind)} captcha and no captcha-solving service is configured`);
          }
          solvedKeys.add(key);
          let token: string;
          try {
            token = await options.solver.solve(
              { kind: c.kind, websiteURL: page.url(), websiteKey: c.sitekey, action: c.action, data: c.data, invisible: c.invisible },
              { deadline: options.deadline },
            );
          } catch (err) {
            throw new ChallengeError(502, `Upstream error: the ${captchaName(c.kind)} captcha could not be solved (${(err as Error).message})`);
          }
          await page.evaluate(inPage(applyTokenInPage, c.kind, token));
        }
      }
    } catch (err) {
      if (err instanceof ChallengeError) throw err;
      if (!isNavigationError(err)) throw err;
      await settleNavigation(page, options.deadline);
      continue;
    }
    // Challenges end in a navigation (a reload, a redirect, a form post): wait for one, a
    // little at a time, then look again.
    if (await waitForMainNavigation(page, Math.min(2000, options.deadline - Date.now()))) await settleNavigation(page, options.deadline);
  }
}

function captchaName(kind: CaptchaKind): string {
  return { recaptcha_v2: 'reCAPTCHA', recaptcha_v3: 'reCAPTCHA v3', hcaptcha: 'hCaptcha', turnstile: 'Turnstile' }[kind];
}

function waitForMainNavigation(page: ChallengePage, ms: number): Promise<boolean> {
  return ms <= 0 ? Promise.resolve(false) : page.waitForMainNavigation(ms);
}

async function settleNavigation(page: ChallengePage, deadline: number): Promise<void> {
  const t = Math.min(30_000, deadline - Date.now());
  if (t > 0) await page.waitForDomContentLoaded(t);
}
