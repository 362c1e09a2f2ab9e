// Chromium's command line and window geometry for a set of launch options. Pure
// functions, so the flags are checked by unit tests without starting a browser.
import type { LaunchOptions } from './launch-options.js';

export interface Size {
  width: number;
  height: number;
}

/** Outer window size minus page size for a normal window: the tab strip and toolbar. */
export type WindowInsets = Size;

export interface Geometry {
  /** --window-size: the outer window. */
  window: Size;
  /** The X screen (headful) or the emulated screen (headless --screen-info). */
  screen: Size;
  /** Where the page sits on the screen, in screen pixels (the window is at 0,0). */
  content: { x: number; y: number; width: number; height: number };
}

/**
 * Chromium's window is larger than the viewport by its tab strip and toolbar (87 px on
 * Chromium 156, in both headful and new-headless mode), except in fullscreen. So the
 * window is sized viewport + insets, and the screen is made to fit the window.
 *
 * Headful: the X screen is one pixel wider and taller than the window. Chromium on X11
 * shrinks a window that exactly matches the screen by 1 px in each direction (both at
 * startup and through Browser.setWindowBounds; measured on Chromium 156 under Xvfb
 * without a window manager), which would make innerWidth/innerHeight viewport - 1.
 *
 * Headless: the emulated screen (--screen-info) equals the window, as on a real desktop
 * with a maximised window; in fullscreen, headless Chromium sizes the window to that
 * screen, so it must equal the viewport.
 */
export function geometry(options: LaunchOptions, insets: WindowInsets): Geometry {
  const { width, height } = options.viewport;
  const inset = options.fullscreen ? { width: 0, height: 0 } : insets;
  const window = { width: width + inset.width, height: height + inset.height };
  const slack = options.headless ? 0 : 1;
  return {
    window,
    screen: { width: window.width + slack, height: window.height + slack },
    content: { x: 0, y: inset.height, width, height },
  };
}

export interface ArgsLayout {
  userDataDir: string;
  geometry: Geometry;
  /** Chromium's sandbox on; off only by the operator's BROWSER_SANDBOX=off (browser-user.ts). */
  sandbox: boolean;
}

/**
 * The omnibox's suggestion popups as WebUI pages (chrome://omnibox-popup.top-chrome), which
 * Chromium 156 preloads for every new window, a new browser context's first page included:
 * each a renderer running ~400 JavaScript modules, ~400 ms of CPU on this project's 2-core
 * machine. A fresh context rendering the fetch fixture cost the browser ~870 ms of CPU with
 * them and ~260 ms without (bench/fetch). Nobody types into the address bar of a browser
 * driven over CDP; without these, the classic popup stands in.
 */
const OMNIBOX_WEBUI = ['WebUIOmniboxPopup', 'WebUIOmniboxFullPopup', 'WebUIOmniboxAimPopup'];

/**
 * Features every browser of ours runs without. Background calls to Google services (network
 * time, optimization hints) would show up in a session's metered traffic and domains; the
 * omnibox popups above cost every window a renderer. Autofill's server queries: on every
 * page with a form, Chromium sends the form's field signatures to
 * content-autofill.googleapis.com (two or three CONNECTs through the session's traffic
 * proxy per load, seen on the form fixture), which would leak what pages a session fills,
 * count as its traffic, and cost each navigation the proxy's work while the page loads.
 * Autofill itself keeps working with local heuristics.
 */
export const DISABLED_FEATURES: readonly string[] = ['NetworkTimeServiceQuerying', 'OptimizationHints', 'AutofillServerCommunication', ...OMNIBOX_WEBUI];

/** Where Chromium's own calls to Google services are sent so that they go nowhere: port 9
 *  is on Chromium's unsafe list, so it never even connects, and loopback bypasses proxies. */
export const NOWHERE = 'http://127.0.0.1:9/';

/** What keeps Chromium off the network on its own account (no Google services, no QUIC) and
 *  lets a fresh profile start without dialogs or OS keyrings: every browser the server starts. */
export const QUIET_SWITCHES: readonly string[] = [
  '--disable-background-networking',
  '--disable-component-update',
  // --disable-component-update does not stop every update check: some 8-12 s after its
  // start Chromium 156 still POSTs update.googleapis.com/service/update2/json (over
  // https, then plain http) through the session's proxy, traffic no user asked for.
  // Pointed NOWHERE, the check goes nowhere (measured: gone from the proxy's log).
  `--component-updater=url-source=${NOWHERE}`,
  // Nor does --disable-sync stop Chromium's account checks: headless or not, it CONNECTs
  // to accounts.google.com:443 some 2, 3, 6, 14 and 39 s after its start (a backoff, as
  // each fails here) through the session's proxy. Its sign-in service's base URL pointed
  // NOWHERE, the checks go nowhere (measured: gone from a proxy's log over 40 s). Pages
  // that sign in to Google are not concerned: this moves only the browser's own idea of
  // where its sign-in lives.
  `--gaia-url=${NOWHERE}`,
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
  '--no-default-browser-check',
  '--password-store=basic',
  '--use-mock-keychain',
];

export function chromiumArgs(options: LaunchOptions, layout: ArgsLayout): string[] {
  const { window, screen } = layout.geometry;
  const args = [
    // Port 0: Chromium picks a free port and prints "DevTools listening on ws://…" on
    // stderr, which is how we learn it; it binds 127.0.0.1 only.
    '--remote-debugging-port=0',
    // And a pipe (fds 3 and 4) that only the server holds: Chromium exits when it closes,
    // so a browser never outlives its server (launch.ts).
    '--remote-debugging-pipe',
    `--user-data-dir=${layout.userDataDir}`,
    ...QUIET_SWITCHES,
    // /dev/shm is 64 MB in most containers: Chromium crashes tabs when it fills up.
    '--disable-dev-shm-usage',
    // --no-sandbox and --disable-web-security show an "unsupported command-line flag"
    // infobar that steals ~56 px from the page, so the viewport would not be what was
    // asked for; --test-type suppresses that infobar (Playwright's app mode does the same).
    '--test-type',
    // A profile copied from a session that was killed would offer to restore its pages.
    '--hide-crash-restore-bubble',
    '--disable-search-engine-choice-screen',
    // Sessions are driven remotely: a tab in the background or an occluded window must
    // keep running its timers and rendering at full speed.
    '--disable-background-timer-throttling',
    '--disable-backgrounding-occluded-windows',
    '--disable-renderer-backgrounding',
    // No GPU here: WebGL falls back to SwiftShader only when this allows it; without it,
    // WebGL sites (maps, many fingerprinting checks) see no WebGL at all.
    '--enable-unsafe-swiftshader',
    // Never upload crash reports.
    '--disable-breakpad',
    // navigator.webdriver false, enforced by the browser: a cloud browser is driven over
    // CDP by design, and ordinary bot checks should not refuse it for that.
    '--disable-blink-features=AutomationControlled',
    '--window-position=0,0',
    `--window-size=${window.width},${window.height}`,
  ];
  if (!layout.sandbox) args.push('--no-sandbox');
  if (options.headless) {
    args.push('--headless=new', `--screen-info={${screen.width}x${screen.height}}`);
  } else {
    // Explicit, so a WAYLAND_DISPLAY in the server's environment can never matter.
    args.push('--ozone-platform=x11');
    // Xvfb has no GPU. Left to find that out, Chromium starts a GPU process that fails
    // ("errors during initialization") two or three times, ~0.3 s apart, before it settles
    // on these very switches; given them, its first GPU process is the one it keeps
    // (headless starts with them on its own).
    args.push('--use-gl=angle', '--use-angle=swiftshader-webgl');
  }
  if (options.fullscreen) args.push('--start-fullscreen');
  if (options.disableWebSecurity) args.push('--disable-web-security');
  if (!options.popupBlocker) args.push('--disable-popup-blocking');
  if (options.proxy) {
    args.push(`--proxy-server=${options.proxy.server}`);
    if (options.proxy.bypass) args.push(`--proxy-bypass-list=${options.proxy.bypass}`);
  }
  // Chromium reads only the last --disable-features, so every feature goes into one.
  const disabled = [...DISABLED_FEATURES];
  if (options.crossOriginSupport) {
    // Site isolation off: cross-site iframes stay in their page's process and CDP target.
    args.push('--disable-site-isolation-trials');
    disabled.push('IsolateOrigins', 'site-per-process');
  }
  const extensions = options.extensionDirs ?? [];
  if (extensions.length > 0) {
    const list = extensions.join(',');
    // Chrome 137+ ignores --load-extension unless this feature is turned off (Chromium
    // builds still honour it; the flag keeps both working).
    args.push(`--load-extension=${list}`, `--disable-extensions-except=${list}`);
    disabled.push('DisableLoadExtensionCommandLineSwitch');
  }
  args.push(`--disable-features=${disabled.join(',')}`);
  // Open one blank tab, so a CDP client attaching to the browser finds a page.
  args.push('about:blank');
  return args;
}
