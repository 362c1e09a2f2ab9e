// What a login page asks, read by rules (no model): one in-page pass a frame marks the
// elements the `auto` login acts on (data-cb-login="username|password|code|submit|stay|account")
// and answers what it saw, so the runner (auto-login.ts) needs one round trip a look, and
// finds what it fills with a plain attribute selector afterwards.
import type { Frame, Page } from 'playwright-core';
import { inPage } from '../page/in-page.js';

/** The attribute the look marks elements with. */
export const MARK = 'data-cb-login';
export type Mark = 'username' | 'password' | 'code' | 'submit' | 'stay' | 'account';

export interface FrameLook {
  /** Which marks were set (each on one element). */
  marks: Mark[];
  captcha: boolean;
  /** A visible cookie or consent banner. */
  consent: boolean;
  /** The page says a code was sent (by e-mail, SMS, an app prompt): only a person has it. */
  codeSent: boolean;
  /** Visible inputs the look could not place (not a search box). */
  unknownInputs: number;
  /** The visible text, cut short (the failure texts are read from it). */
  text: string;
}

export interface PageLook extends FrameLook {
  /** The frame the marks are in (the main frame, or the iframe holding the login). */
  frame: Frame;
}

/** Runs in the frame: marks and describes what it asks. `username` finds an account chooser's entry. */
function lookInFrame(mark: string, username: string): FrameLook {
  for (const el of Array.from(document.querySelectorAll(`[${mark}]`))) el.removeAttribute(mark);
  const visible = (el: Element) => {
    const r = (el as HTMLElement).getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return false;
    const cs = getComputedStyle(el);
    return cs.visibility !== 'hidden' && cs.display !== 'none' && Number(cs.opacity) > 0.05;
  };
  const words = (el: Element) => {
    const i = el as HTMLInputElement;
    const labels = i.labels ? Array.from(i.labels).map((l) => l.innerText) : [];
    return [i.name, i.id, i.placeholder, el.getAttribute('aria-label'), i.autocomplete, ...labels].join(' ');
  };
  const label = (el: Element) =>
    ((el as HTMLElement).innerText || (el as HTMLInputElement).value || el.getAttribute('aria-label') || '').replace(/\s+/g, ' ').trim();
  const text = (document.body?.innerText ?? '').slice(0, 4000);
  const marks: string[] = [];
  const set = (el: Element | undefined, m: string) => {
    if (!el || marks.includes(m)) return;
    el.setAttribute(mark, m);
    marks.push(m);
  };

  const inputs = Array.from(document.querySelectorAll('input, textarea')).filter(
    (el) => visible(el) && !(el as HTMLInputElement).disabled && !(el as HTMLInputElement).readOnly,
  ) as HTMLInputElement[];
  const CODE = /one-time-code|\b(otp|totp|2fa|mfa|passcode|pin)\b|code|token|verification/i;
  const USER = /user ?name|username|e-?mail|login|identifier|account|phone|\buser\b/i;
  let unknownInputs = 0;
  for (const i of inputs) {
    const type = (i.type || 'text').toLowerCase();
    if (['hidden', 'submit', 'button', 'checkbox', 'radio', 'search', 'image', 'reset', 'file'].includes(type)) continue;
    const w = words(i);
    if (type === 'password') set(i, 'password');
    else if (i.autocomplete === 'one-time-code' || (CODE.test(w) && !/e-?mail|user ?name/i.test(w))) set(i, 'code');
    else if (i.autocomplete === 'username' || type === 'email' || USER.test(w)) set(i, 'username');
    else if (!/search|query|\bq\b/i.test(w)) unknownInputs++;
  }
  // The password asks for the password alone: a code field beside it is something else.
  const primary = (['password', 'code', 'username'] as const).map((m) => document.querySelector(`[${mark}="${m}"]`)).find(Boolean);
  const clickable = (root: ParentNode) =>
    Array.from(root.querySelectorAll('button, input[type="submit"], input[type="button"], [role="button"], a')).filter(
      (el) => visible(el) && !(el as HTMLButtonElement).disabled,
    );
  const GO = /^(next|continue|sign ?in|log ?in|submit|verify|confirm|proceed|weiter|anmelden|suivant|continuer|connexion|siguiente)\b/i;
  if (primary) {
    const form = primary.closest('form');
    const inForm = form ? clickable(form) : [];
    set(
      inForm.find((b) => (b as HTMLButtonElement).type === 'submit') ??
        inForm.find((b) => GO.test(label(b))) ??
        clickable(document).find((b) => GO.test(label(b))),
      'submit',
    );
  } else {
    // Pages without a field: "stay signed in?", an account chooser.
    if (/stay signed in|keep me signed in|remember (me|this (device|browser))|trust this (device|browser)|don.t ask again/i.test(text)) {
      set(
        clickable(document).find((b) => /^(yes|stay signed in|keep me signed in|remember|trust|continue|ok)\b/i.test(label(b))),
        'stay',
      );
    }
    const name = username.trim().toLowerCase();
    if (name && !marks.includes('stay')) {
      const entries = clickable(document).filter((b) => label(b).toLowerCase().includes(name));
      entries.sort((a, b) => label(a).length - label(b).length);
      set(entries[0], 'account');
    }
  }
  // A widget whose response field holds a token (the session's solver answered it) asks
  // nothing more: the form goes with the token once its fields are filled.
  const answered = Array.from(document.querySelectorAll('[name="g-recaptcha-response"], [name="h-captcha-response"], [name="cf-turnstile-response"]')).some(
    (f) => (f as HTMLInputElement).value,
  );
  const captcha =
    !answered &&
    !!Array.from(
      document.querySelectorAll(
        'iframe[src*="recaptcha"], iframe[src*="hcaptcha"], iframe[src*="challenges.cloudflare.com"], .g-recaptcha, .h-captcha, .cf-turnstile',
      ),
    ).find(visible);
  const consent = Array.from(
    document.querySelectorAll('[role="dialog"], [aria-modal="true"], dialog, [id*="cookie" i], [class*="cookie" i], [id*="consent" i], [class*="consent" i]'),
  ).some((el) => visible(el) && /cookie|consent/i.test((el as HTMLElement).innerText || ''));
  const codeSent =
    marks.includes('code') &&
    /\b(we|we've|we have) (sent|e-?mailed|texted)\b|\bsent (a|the|you a) (code|message)\b|check your (e-?mail|phone|inbox|messages)|\bsms\b|text message/i.test(
      text,
    );
  return { marks: marks as Mark[], captcha, consent, codeSent, unknownInputs, text };
}

const EMPTY: FrameLook = { marks: [], captcha: false, consent: false, codeSent: false, unknownInputs: 0, text: '' };
/** Which frame holds the login, when several show something: the one with the most telling mark. */
const RANK: Mark[] = ['password', 'code', 'username', 'stay', 'account'];
const rank = (l: FrameLook) => {
  const i = RANK.findIndex((m) => l.marks.includes(m));
  return i < 0 ? RANK.length + (l.captcha ? 0 : 1) : i;
};

/** One look at every frame of the page; the main frame's text always counts (errors show there). */
export async function lookAt(page: Page, username: string): Promise<PageLook> {
  const expression = inPage(lookInFrame, MARK, username);
  const looks = await Promise.all(page.frames().map(async (frame) => ({ frame, ...((await frame.evaluate(expression).catch(() => EMPTY)) as FrameLook) })));
  const main = looks.find((l) => l.frame === page.mainFrame()) ?? { frame: page.mainFrame(), ...EMPTY };
  const best = looks.reduce((a, b) => (rank(b) < rank(a) ? b : a), main);
  if (best === main) return main;
  return {
    ...best,
    captcha: best.captcha || main.captcha,
    consent: best.consent || main.consent,
    text: `${main.text}\n${best.text}`,
    unknownInputs: best.unknownInputs,
  };
}
