// Cookie-consent dialogs: dismissed before the page is returned, rejecting non-essential
// cookies where the dialog allows it, otherwise accepting.
//
// First DuckDuckGo's autoconsent (@duckduckgo/autoconsent, maintained rules for hundreds of
// consent-management platforms plus its own multi-language heuristics): its content script
// runs in every frame from document start (an init script), talks to us through a binding,
// and opts out; when opting out fails it is told to opt in. Then, for what it did not
// handle, a fallback of our own: a visible cookie banner found by its words in several
// languages, and its reject button clicked, else its accept button.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { BrowserContext, Frame, Page } from 'playwright-core';
import type { Logger } from 'pino';
import { filterCompactRules, type IndexedCMPRuleset } from '@duckduckgo/autoconsent';
import { inPage } from './in-page.js';
import { isNavigationError } from './readiness.js';

const require = createRequire(import.meta.url);
let loaded: { script: string; rules: IndexedCMPRuleset } | undefined;
function assets() {
  loaded ??= {
    // The package exports its builds but not this file: it sits beside the CommonJS build.
    script: readFileSync(join(dirname(require.resolve('@duckduckgo/autoconsent')), 'autoconsent.playwright.js'), 'utf8'),
    rules: require('@duckduckgo/autoconsent/rules/compact-rules.json') as IndexedCMPRuleset,
  };
  return loaded;
}

/** Filtered rules by (frame kind, URL): filtering costs a few ms and pages repeat. */
const rulesCache = new Map<string, string>();
function rulesFor(url: string, mainFrame: boolean): string {
  const key = `${mainFrame ? 'm' : 'f'} ${url}`;
  let json = rulesCache.get(key);
  if (json === undefined) {
    json = JSON.stringify({ compact: filterCompactRules(assets().rules, { url, mainFrame }) });
    if (rulesCache.size > 500) rulesCache.clear();
    rulesCache.set(key, json);
  }
  return json;
}

const CONFIG = JSON.stringify({
  enabled: true,
  autoAction: 'optOut',
  disabledCmps: [],
  // The dialog is acted on, not hidden: a hidden one would still be in the returned DOM.
  enablePrehide: false,
  enableCosmeticRules: true,
  enableGeneratedRules: true,
  enableHeuristicDetection: true,
  // Reject where possible, else acknowledge, else accept.
  heuristicMode: 'tier2',
  detectRetries: 20,
  isMainWorld: false,
  prehideTimeout: 2000,
  visualTest: false,
  logs: { lifecycle: false, rulesteps: false, detectionsteps: false, evals: false, errors: false, messages: false, waits: false },
});

interface PageConsent {
  detected: Set<string>;
  /** Popups found and not yet handled, by frame. */
  open: Map<Frame, string>;
  done: string[];
  failedOptOut: Set<Frame>;
  changed: () => void;
  waiters: Set<() => void>;
}

export interface ConsentResult {
  /** What was dismissed: the CMP names autoconsent handled, and 'heuristic:reject|accept'. */
  dismissed: string[];
}

/**
 * One per context. Autoconsent is brought in only for pages that show signs of a consent
 * dialog (cookie words in several languages, a consent-management iframe): most pages have
 * none, and its content script (about 140 KB) and detection loop cost every page CPU time.
 * It is then injected into every frame of the ready page, where it starts detecting at once.
 */
export class ConsentTracker {
  private readonly pages = new WeakMap<Page, PageConsent>();
  private bound = false;

  private constructor(
    private readonly context: BrowserContext,
    private readonly log: Logger,
  ) {}

  static async attach(context: BrowserContext, log: Logger): Promise<ConsentTracker> {
    return new ConsentTracker(context, log);
  }

  private state(page: Page): PageConsent {
    let s = this.pages.get(page);
    if (!s) {
      const waiters = new Set<() => void>();
      s = { detected: new Set(), open: new Map(), done: [], failedOptOut: new Set(), waiters, changed: () => waiters.forEach((w) => w()) };
      this.pages.set(page, s);
    }
    return s;
  }

  /** Exposes the binding and injects the content script into every frame, now and later. */
  private async inject(page: Page): Promise<void> {
    if (!this.bound) {
      this.bound = true;
      await this.context.exposeBinding('autoconsentSendMessage', (source, msg) => this.onMessage(source.page, source.frame, msg));
    }
    const script = assets().script;
    const into = (frame: Frame) => frame.evaluate(script).catch(() => {});
    page.on('framenavigated', (frame) => void into(frame));
    await Promise.all(page.frames().map(into));
  }

  private async onMessage(page: Page, frame: Frame, msg: any): Promise<void> {
    if (!msg || typeof msg !== 'object') return;
    const s = this.state(page);
    const reply = (payload: string) => frame.evaluate(`window.autoconsentReceiveMessage && window.autoconsentReceiveMessage(${payload})`).catch(() => {});
    switch (msg.type) {
      case 'init': {
        const mainFrame = frame === page.mainFrame();
        await reply(`{ "type": "initResp", "config": ${CONFIG}, "rules": ${rulesFor(String(msg.url ?? frame.url()), mainFrame)} }`);
        break;
      }
      case 'eval': {
        let result: unknown = false;
        try {
          result = await frame.evaluate(String(msg.code));
        } catch {
          result = false;
        }
        await reply(JSON.stringify({ id: msg.id, type: 'evalResp', result: result ?? false }));
        break;
      }
      case 'cmpDetected':
        s.detected.add(String(msg.cmp));
        s.changed();
        break;
      case 'popupFound':
        s.open.set(frame, String(msg.cmp));
        this.log.debug({ cmp: msg.cmp }, 'consent dialog found');
        s.changed();
        break;
      case 'optOutResult':
        if (msg.result === false && !s.failedOptOut.has(frame)) {
          // No way to reject: accept instead.
          s.failedOptOut.add(frame);
          await reply('{ "type": "optIn" }');
        }
        break;
      case 'autoconsentDone':
        s.open.delete(frame);
        s.done.push(String(msg.cmp));
        this.log.debug({ cmp: msg.cmp }, 'consent dialog dismissed');
        s.changed();
        break;
      default:
        break;
    }
  }

  /**
   * Called once the page is ready (`signs`: what CONSENT_SIGNS_PROBE answered just now, if the
   * caller asked it already): when it shows signs of a consent dialog, lets autoconsent
   * detect and dismiss it (bounded), then runs the fallback heuristics. Answers what was
   * dismissed.
   */
  async settle(page: Page, deadline: number, maxWaitMs = 8000, signs?: boolean): Promise<ConsentResult> {
    const dismissed: string[] = [];
    try {
      if (!(signs ?? ((await page.evaluate(CONSENT_SIGNS_PROBE)) as boolean))) return { dismissed };
    } catch (err) {
      if (!isNavigationError(err)) throw err;
      return { dismissed };
    }
    const s = this.state(page);
    const started = Date.now();
    const until = Math.min(deadline, started + maxWaitMs);
    await this.inject(page);
    // Until a dialog found is dismissed; or nothing detected for a while; or a platform
    // detected that shows no dialog (consent given before, or none needed here).
    for (;;) {
      const now = Date.now();
      if (now >= until) break;
      if (s.open.size === 0) {
        if (s.done.length > 0) break;
        if (s.detected.size === 0 && now - started >= NOTHING_DETECTED_MS) break;
        if (s.detected.size > 0 && now - started >= NO_POPUP_MS) break;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          s.waiters.delete(done);
          resolve();
        };
        const t = setTimeout(done, Math.min(100, Math.max(0, until - now)));
        s.waiters.add(done);
      });
    }
    dismissed.push(...s.done);
    if (Date.now() < deadline) {
      try {
        const clicked = (await page.evaluate(inPage(dismissBannerInPage))) as string | null;
        if (clicked) {
          dismissed.push(`heuristic:${clicked}`);
          this.log.debug({ clicked }, 'consent banner dismissed by heuristics');
        }
      } catch (err) {
        if (!isNavigationError(err)) throw err;
      }
    }
    return { dismissed };
  }
}

/** How long autoconsent may look before a page counts as having no consent platform. */
const NOTHING_DETECTED_MS = 2500;
/** How long a detected platform may take to show its dialog. */
const NO_POPUP_MS = 3500;

/** Runs in the page: whether it shows signs of a consent dialog worth looking at closely. */
function consentSignsInPage(): boolean {
  const WORDS =
    /cookie|consent|gdpr|datenschutz|einwilligung|galletas|biscotti|données personnelles|toestemming|zgod|traceurs|consentimiento|consenso|samtykke|evästeet|souhlas|privacy (settings|preferences|choices)/i;
  const text = document.body ? document.body.innerText || '' : '';
  if (WORDS.test(text)) return true;
  for (const f of Array.from(document.querySelectorAll('iframe'))) {
    const src = (f as HTMLIFrameElement).src || '';
    if (/consent|cmp|cookie|privacy|sourcepoint|trustarc|didomi|onetrust|usercentrics|quantcast|cookiebot|truste/i.test(src)) return true;
  }
  return !!document.querySelector('[id*="cookie" i], [class*="cookie" i], [id*="consent" i], [class*="consent" i], [id*="cmp" i]');
}

/** consentSignsInPage as an in-page expression (inPage). */
export const CONSENT_SIGNS_PROBE = inPage(consentSignsInPage);

/**
 * Runs in the page: finds a visible cookie banner and clicks its reject button, else its
 * accept button. Answers 'reject', 'accept' or null.
 */
function dismissBannerInPage(): string | null {
  const COOKIE_WORDS =
    /cookie|consent|gdpr|datenschutz|einwilligung|galletas|biscotti|données personnelles|toestemming|zgod|traceurs|consentimiento|consenso|samtykke|evästeet|souhlas/i;
  const REJECT =
    /^(reject|reject all|reject all cookies|decline|decline all|deny|deny all|refuse|refuse all|disagree|i disagree|no,? thanks|only (strictly )?necessary( cookies)?|necessary (cookies )?only|essential (cookies )?only|use (only )?(strictly )?necessary cookies( only)?|continue without accepting|alle ablehnen|ablehnen|nur (technisch )?notwendige( cookies)?|nur erforderliche( cookies)?|tout refuser|refuser( tout)?|continuer sans accepter|rechazar( todo| todas)?|rechazar cookies|rifiuta( tutto| tutti)?|weigeren|alles weigeren|alle weigeren|odrzuć( wszystkie)?|recusar( tudo| todos)?|rejeitar( tudo| todos)?|avvisa( alla)?|afvis( alle)?|hylkää( kaikki)?|odmítnout( vše)?|avslå( alle)?)$/i;
  const ACCEPT =
    /^(accept|accept all|accept all cookies|accept cookies|allow|allow all|allow all cookies|allow cookies|agree|i agree|agree and close|ok|okay|got it|i understand|understood|alle akzeptieren|akzeptieren|alle cookies akzeptieren|zustimmen|einverstanden|tout accepter|accepter( et fermer)?|j'accepte|aceptar( todo| todas| cookies)?|acepto|accetta( tutto| tutti)?|accetto|akkoord|accepteren|alles accepteren|alle accepteren|zaakceptuj( wszystkie)?|akceptuję|aceitar( tudo| todos)?|aceito|godkänn( alla)?|acceptera( alla)?|hyväksy( kaikki)?|přijmout( vše)?|souhlasím)$/i;

  const visible = (el: Element) => {
    const r = (el as HTMLElement).getBoundingClientRect();
    if (r.width < 2 || r.height < 2) return false;
    const cs = getComputedStyle(el);
    return cs.visibility !== 'hidden' && cs.display !== 'none' && Number(cs.opacity) > 0.05;
  };
  const label = (el: Element) =>
    ((el as HTMLElement).innerText || (el as HTMLInputElement).value || el.getAttribute('aria-label') || '').replace(/\s+/g, ' ').trim().replace(/[.!]$/, '');

  // Containers: dialogs, fixed or sticky layers, and anything named like a banner.
  const candidates = new Set<Element>();
  for (const el of Array.from(
    document.querySelectorAll(
      '[role="dialog"], [role="alertdialog"], [aria-modal="true"], dialog, [id*="cookie" i], [class*="cookie" i], [id*="consent" i], [class*="consent" i], [id*="gdpr" i], [class*="gdpr" i], [class*="banner" i]',
    ),
  )) {
    candidates.add(el);
  }
  for (const el of Array.from(document.body ? document.body.querySelectorAll('div, section, aside, footer, form') : [])) {
    const pos = getComputedStyle(el).position;
    if (pos === 'fixed' || pos === 'sticky') candidates.add(el);
  }
  const banners = Array.from(candidates).filter((el) => {
    if (!visible(el)) return false;
    const text = ((el as HTMLElement).innerText || '').slice(0, 5000);
    return text.length > 0 && text.length < 5000 && COOKIE_WORDS.test(text);
  });
  // Innermost first: the banner itself rather than the page wrapper around it.
  banners.sort((a, b) => ((a as HTMLElement).innerText || '').length - ((b as HTMLElement).innerText || '').length);
  for (const banner of banners) {
    const buttons = Array.from(banner.querySelectorAll('button, a, [role="button"], input[type="button"], input[type="submit"]')).filter(visible);
    const reject = buttons.find((b) => REJECT.test(label(b)));
    if (reject) {
      (reject as HTMLElement).click();
      return 'reject';
    }
    const accept = buttons.find((b) => ACCEPT.test(label(b)));
    if (accept) {
      (accept as HTMLElement).click();
      return 'accept';
    }
  }
  return null;
}
