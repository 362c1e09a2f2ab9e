// A session's browser: Chromium in its own root, behind the forwarding proxy that meters
// and polices its traffic, in the shape the warm pool keeps.
import type { Logger } from 'pino';
import {
  closeMeteredBrowser,
  launchMeteredBrowser,
  type BrowserLimits,
  type LaunchEnv,
  type LaunchOptions,
  type MeteredBrowser,
  type Poolable,
} from '../browser/index.js';
import type { ServiceConfig } from '../config/config.js';

export interface SessionBrowser extends Poolable, MeteredBrowser {}

/**
 * sessionId null: a warm browser, adopted by its session later (`background`: started at a
 * low CPU weight). `limits`: its project's caps, where they are not the server's.
 */
export async function launchSessionBrowser(
  o: { config: ServiceConfig; log: Logger },
  launch: LaunchOptions,
  rootDir: string,
  signal: AbortSignal | undefined,
  sessionId: string | null,
  prepare?: LaunchEnv['prepare'],
  { background, limits }: { background?: boolean; limits?: BrowserLimits } = {},
): Promise<SessionBrowser> {
  const caps = o.config.browserCaps;
  const metered = await launchMeteredBrowser(
    {
      headless: launch.headless,
      viewport: launch.viewport,
      fullscreen: launch.fullscreen,
      disableWebSecurity: launch.disableWebSecurity,
      crossOriginSupport: launch.crossOriginSupport,
      popupBlocker: launch.popupBlocker,
      pdfViewer: launch.pdfViewer,
      adblock: launch.adblock,
      extraStealth: launch.extraStealth,
      extensionDirs: launch.extensionDirs,
    },
    {
      chromiumPath: o.config.chromiumPath,
      sandbox: o.config.browserSandbox === 'on',
      ...(caps ? { cgroup: { place: caps.place, limits: limits ?? caps.limits } } : {}),
      rootDir,
      log: o.log,
      signal,
      sessionId,
      prepare,
      background,
    },
    { allowPrivateNetworks: o.config.allowPrivateNetworks, log: o.log },
  );
  const { browser } = metered;
  return {
    ...metered,
    rootDir: browser.rootDir,
    exited: browser.exited,
    adopt: (id) => browser.adopt(id),
    close: () => closeMeteredBrowser(metered),
  };
}
