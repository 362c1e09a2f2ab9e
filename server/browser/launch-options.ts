// What a browser is launched with: the part of a session's configuration that Chromium's
// command line and profile depend on (and so decides whether a warm pooled browser fits).

export interface LaunchOptions {
  headless: boolean;
  /** The page's viewport (window.innerWidth/innerHeight), not the outer window size. */
  viewport: { width: number; height: number };
  fullscreen: boolean;
  disableWebSecurity: boolean;
  /** Site isolation off: cross-origin iframes share their page's process (and CDP target). */
  crossOriginSupport?: boolean;
  /** Chromium blocks popups by default; false adds --disable-popup-blocking. */
  popupBlocker: boolean;
  /** PDFs open in the viewer; false downloads them (a profile preference). */
  pdfViewer: boolean;
  /** EasyList and EasyPrivacy blocked in every page (adblock.ts). */
  adblock: boolean;
  /** Fingerprint hardening in every page (stealth-extension.ts). */
  extraStealth: boolean;
  proxy?: { server: string; bypass?: string };
  /** Unpacked extension directories. */
  extensionDirs?: string[];
}

/** The defaults of the session creation body: what pooled browsers are launched with. */
export const DEFAULT_LAUNCH_OPTIONS: Readonly<LaunchOptions> = Object.freeze({
  headless: false,
  viewport: Object.freeze({ width: 1440, height: 900 }),
  fullscreen: false,
  disableWebSecurity: false,
  crossOriginSupport: false,
  popupBlocker: true,
  pdfViewer: true,
  adblock: true,
  extraStealth: false,
});

/** Whether two option sets launch identical browsers (a pooled browser serves either). */
export function sameLaunchOptions(a: LaunchOptions, b: LaunchOptions): boolean {
  const dirs = (o: LaunchOptions) => (o.extensionDirs ?? []).join('\0');
  return (
    a.headless === b.headless &&
    a.viewport.width === b.viewport.width &&
    a.viewport.height === b.viewport.height &&
    a.fullscreen === b.fullscreen &&
    a.disableWebSecurity === b.disableWebSecurity &&
    (a.crossOriginSupport ?? false) === (b.crossOriginSupport ?? false) &&
    a.popupBlocker === b.popupBlocker &&
    a.pdfViewer === b.pdfViewer &&
    a.adblock === b.adblock &&
    a.extraStealth === b.extraStealth &&
    (a.proxy?.server ?? '') === (b.proxy?.server ?? '') &&
    (a.proxy?.bypass ?? '') === (b.proxy?.bypass ?? '') &&
    dirs(a) === dirs(b)
  );
}
