// How the tool browsers avoid looking automated to ordinary bot checks.
//
// Measured on the Chromium the service runs (headless, driven by Playwright), what such
// checks look at and what it shows unpatched:
//   - navigator.webdriver: true (from --enable-automation and headless mode);
//   - the user agent: "HeadlessChrome/N" (navigator.userAgent and the User-Agent header);
//   - outerWidth/outerHeight equal to innerWidth/innerHeight (no browser window around it);
//   - WebGL's unmasked vendor/renderer: SwiftShader, the software renderer of headless VMs;
//   - already fine: navigator.plugins (5 PDF viewers) and mimeTypes, languages (en-US, en),
//     userAgentData brands ("Chromium", no "HeadlessChrome"), window.chrome, notification
//     permission ("default") agreeing with permissions.query ("prompt"), hardwareConcurrency.
//
// The fixes, in order of preference:
//   1. enforced by the browser: no --enable-automation and
//      --disable-blink-features=AutomationControlled (fetch-browsers.ts), so webdriver is
//      false natively; through the context, the user agent without "Headless" (header,
//      navigator.userAgent, every frame and worker), Accept-Language and the locale;
//   2. an init script that runs before any page script in every frame, for what no switch
//      or CDP command changes: window outer size, WebGL vendor/renderer (and webdriver,
//      should a frame still report it). Its replacements keep their native names and
//      `toString()` shows `[native code]`, so descriptor and source checks see what a stock
//      Chrome shows.
// Driver-level traces: Playwright enables the Runtime domain, which pages once detected by
// logging an Error whose `stack` getter the inspector then read. Chromium 156's inspector no
// longer reads it: measured with Playwright's own page, and with Runtime.enable sent again
// from a CDP session, the getter never ran. patchright-core (1.63), which exists to hide
// that domain, gave the same answers on that check and on navigator.webdriver, and cost the
// fetch fixture 3 to 12 % more browser CPU per page (303 vs 295, 298 vs 267 ms at
// concurrency 4, two runs each) and 6 % of its throughput.
//
// Why not a generated fingerprint (fingerprint-injector): its generator's Linux Chrome
// fingerprints claim Chrome 90 to 147 (30 drawn, version 2.1.88) on an engine that is 156,
// a "Google Chrome" brand and a GPU this browser does not render with. The user agent would
// then disagree with the engine's own features and client hints, which is what ordinary
// checks compare; the browser's true identity, with the few fixes above, agrees with itself.
import type { Browser, BrowserContextOptions } from 'playwright-core';
import { inPage } from './in-page.js';

/** The browser's real user agent, minus the headless marker. */
export function userAgentFor(browser: Browser): string {
  const major = browser.version().split('.')[0] || '156';
  return `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;
}

export function stealthContextOptions(browser: Browser): BrowserContextOptions {
  return {
    userAgent: userAgentFor(browser),
    locale: 'en-US',
    extraHTTPHeaders: { 'Accept-Language': 'en-US,en;q=0.9' },
  };
}

/**
 * Runs in every frame before the page's scripts (context.addInitScript). Self-contained:
 * it is serialized as source.
 */
function stealthInPage(): void {
  const g = globalThis as unknown as Window & typeof globalThis;
  const marker = Symbol.for('cb.stealth');
  if ((g as unknown as Record<symbol, unknown>)[marker]) return;
  Object.defineProperty(g, marker, { value: true });

  // toString of every replacement answers like a native function.
  const nativeToString = Function.prototype.toString;
  const fakes = new WeakMap<object, string>();
  const toString = {
    toString(this: unknown) {
      if ((typeof this === 'function' || typeof this === 'object') && this !== null && fakes.has(this)) return fakes.get(this)!;
      return nativeToString.call(this as () => void);
    },
  }.toString;
  fakes.set(toString, 'function toString() { [native code] }');
  Object.defineProperty(Function.prototype, 'toString', { value: toString, writable: true, configurable: true, enumerable: false });
  const asNative = <F extends object>(fn: F, name: string): F => {
    fakes.set(fn, `function ${name}() { [native code] }`);
    return fn;
  };
  const replaceGetter = (target: object, prop: string, get: () => unknown) => {
    const d = Object.getOwnPropertyDescriptor(target, prop);
    if (!d || !d.get) return;
    const holder = {
      get [prop](): unknown {
        return get.call(this);
      },
    };
    const getter = Object.getOwnPropertyDescriptor(holder, prop)!.get!;
    Object.defineProperty(getter, 'name', { value: `get ${prop}` });
    asNative(getter, `get ${prop}`);
    Object.defineProperty(target, prop, { ...d, get: getter });
  };

  // navigator.webdriver: false, as in a browser nobody automates.
  try {
    if (typeof Navigator !== 'undefined' && navigator.webdriver) replaceGetter(Navigator.prototype, 'webdriver', () => false);
  } catch {
    // leave it
  }

  // The window has a frame around the page: toolbar and tab strip, as a desktop Chrome.
  try {
    if (typeof window !== 'undefined' && window.outerHeight === window.innerHeight && window.outerWidth === window.innerWidth) {
      const target = Object.getOwnPropertyDescriptor(window, 'outerHeight') ? window : Object.getPrototypeOf(window);
      replaceGetter(target, 'outerHeight', () => window.innerHeight + 87);
      replaceGetter(target, 'outerWidth', () => window.innerWidth);
    }
  } catch {
    // leave it
  }

  // WebGL: a common desktop GPU instead of SwiftShader.
  const VENDOR = 0x9245; // UNMASKED_VENDOR_WEBGL
  const RENDERER = 0x9246; // UNMASKED_RENDERER_WEBGL
  const patchGl = (proto: { getParameter: (p: number) => unknown } | undefined) => {
    if (!proto) return;
    const original = proto.getParameter;
    const replaced = new Proxy(original, {
      apply(target, thisArg, args: [number]) {
        const value = Reflect.apply(target, thisArg, args);
        if (args[0] === VENDOR && typeof value === 'string' && /Google/.test(value)) return 'Google Inc. (Intel)';
        if (args[0] === RENDERER && typeof value === 'string' && /SwiftShader/i.test(value)) {
          return 'ANGLE (Intel, Mesa Intel(R) UHD Graphics 630 (CFL GT2), OpenGL 4.6)';
        }
        return value;
      },
    });
    asNative(replaced, 'getParameter');
    Object.defineProperty(proto, 'getParameter', { value: replaced, writable: true, configurable: true, enumerable: true });
  };
  try {
    patchGl(typeof WebGLRenderingContext !== 'undefined' ? WebGLRenderingContext.prototype : undefined);
    patchGl(typeof WebGL2RenderingContext !== 'undefined' ? WebGL2RenderingContext.prototype : undefined);
  } catch {
    // leave it
  }
}

/** The init script, as source. */
export const stealthScript = inPage(stealthInPage);
