// browser.adblock (on by default): EasyList and EasyPrivacy as declarativeNetRequest (DNR)
// rulesets of a built-in extension (extensions/adblock/, refreshed by `pnpm adblock:lists`),
// loaded into every session browser. Chromium matches each request against the rules in its
// network stack, before any connection is made: every page, frame and worker of the browser,
// the ones a user's CDP client opens included, at no cost to the server per request.
//
// Why this engine, of the three the issue names (measured on this project's 2-core machine,
// Chromium 156; bench/adblock for the end-to-end figures, docs/adblock.md):
//  - host blocking in the session's traffic proxy costs nothing per page, but sees only the
//    host of an HTTPS request (a CONNECT), never its path, initiator or type. EasyList and
//    EasyPrivacy block the big networks under conditions (third-party, resource types, paths,
//    with exceptions for the sites they break): 88,000 host names have a rule without
//    conditions, but doubleclick.net, googlesyndication.com, google-analytics.com,
//    facebook.net, taboola.com and criteo.com are not among them. A
//    proxy faithful to the lists would let those through; one that blocks their hosts anyway
//    breaks what the exceptions keep working (and ad clicks: a navigation is never blocked);
//  - @ghostery/adblocker through CDP request interception has the full rules, but every
//    request waits for a round trip to the server: pausing and continuing each request of a
//    page of 40 subresources, without matching anything, made it load 28 % slower; and the
//    server would have to attach to every target a user's client creates;
//  - DNR has the full rules (uBlock Origin Lite's compiler keeps the filters' options) and no
//    round trip to the server. Its cost is Chromium's own: once an extension with DNR is
//    installed, every request of every page passes through the browser process's main thread
//    (its web-request proxy) before it leaves, ruleset or not: a page of 30 requests started
//    its first script ~20 ms later on this loaded machine, an empty ruleset costing most of
//    that and the 12,600 rules the rest. Indexing the rules is paid once (below); a
//    browser without ad-block does not carry the extension.
// Cosmetic filtering (hiding ad slots with CSS) is left out: EasyList's 13,000 generic
// element-hiding selectors in every frame made a plain page ~20 % slower to load, and the
// site-specific ones would be thousands of per-host stylesheets Chromium reads at launch.
//
// Indexing the rules at a launch would cost it ~330 ms and ~0.35 CPU-s: a browser with no
// other extension installs the copy indexed once per Chromium binary (preindexed.ts) through
// its preferences. Beside other extensions, Chromium indexes them at the launch, into a copy in
// the browser's root (3.6 MB, a few milliseconds), removed with it. New browser contexts
// (Playwright's newContext) are off-the-record profiles, where an extension runs only when
// allowed there: the profile's preferences allow it.
import { cp } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CdpClient } from './cdp-client.js';
import { extensionId } from './extensions.js';
import type { Log } from './log.js';
import { preindexed, type Preindexed } from './preindexed.js';

const source = fileURLToPath(new URL('./extensions/adblock/', import.meta.url));

interface Manifest {
  key: string;
  version: string;
  declarative_net_request: { rule_resources: { id: string }[] };
}

const manifest = JSON.parse(readFileSync(join(source, 'manifest.json'), 'utf8')) as Manifest;

export const ADBLOCK = {
  id: extensionId(manifest.key),
  /** The lists' version (uBlock Origin Lite's, whose rulesets these are). */
  version: manifest.version,
  rulesets: manifest.declarative_net_request.rule_resources.map((r) => r.id),
} as const;

/** How a browser gets the extension: its folder to load, or its entry for the profile's preferences. */
export type AdblockInstall = { dir: string } | { preinstalled: Record<string, unknown> };

/** Per Chromium binary, for the server process's life: the indexed copy (preindexed.ts), or why there is none. */
const indexed = new Map<string, Promise<Preindexed>>();

/**
 * The extension for a browser about to launch. Alone, it is installed from the copy indexed
 * once (preindexed.ts). Beside other extensions, it is copied into the browser's root and
 * loaded with them (--load-extension): there --disable-extensions-except names the loaded
 * folders, and would turn off one the preferences install. So it is too when no indexed
 * copy could be made (logged once).
 */
export async function installAdblock(
  rootDir: string,
  others: readonly string[],
  env: { chromiumPath: string; log: Log; startTimeoutMs?: number },
): Promise<AdblockInstall> {
  const { chromiumPath, log } = env;
  if (others.length === 0) {
    let made = indexed.get(chromiumPath);
    if (!made) {
      // The first launch of a process waits for it (about a second, once per machine and
      // Chromium binary: later processes find the copy made), and those that come meanwhile;
      // none longer than it would wait for its own start.
      made = preindexed(source, ADBLOCK.id, ADBLOCK.rulesets.length, chromiumPath, { timeoutMs: env.startTimeoutMs });
      indexed.set(chromiumPath, made);
      made.catch((err: Error) => log.warn({ err: err.message }, 'ad-block rules not indexed ahead: each browser indexes them at its start'));
    }
    const index = await made.catch(() => undefined);
    if (index) return { preinstalled: index.settings };
  }
  const dir = join(rootDir, 'adblock');
  await cp(source, dir, { recursive: true });
  return { dir };
}

/**
 * Turns the rules off in a running browser that carries the extension: a warm browser taken
 * by a session with `adblock: {active: false}`. A page of the extension (the only place its
 * API runs; it has no service worker) disables every ruleset, then closes, before the session
 * is handed out. ~80 ms, where a cold launch would cost a second.
 */
export async function turnAdblockOff(cdp: CdpClient, timeoutMs = 10_000): Promise<void> {
  const { targetId } = await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank', background: true });
  try {
    const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    await cdp.send('Page.enable', {}, sessionId);
    const loaded = cdp.waitFor('Page.loadEventFired', sessionId, timeoutMs);
    loaded.catch(() => {}); // awaited below unless the navigation fails first
    const nav = await cdp.send<{ errorText?: string }>('Page.navigate', { url: `chrome-extension://${ADBLOCK.id}/off.html` }, sessionId, timeoutMs);
    if (nav.errorText) throw new Error(`the ad-block extension's page did not open: ${nav.errorText}`);
    await loaded;
    const expression = `chrome.declarativeNetRequest
      .updateEnabledRulesets({ disableRulesetIds: ${JSON.stringify(ADBLOCK.rulesets)} })
      .then(() => chrome.declarativeNetRequest.getEnabledRulesets())`;
    const result = await cdp.send<{ result: { value?: unknown }; exceptionDetails?: { exception?: { description?: string } } }>(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
      sessionId,
      timeoutMs,
    );
    const left = result.result.value;
    if (result.exceptionDetails || !Array.isArray(left) || left.length > 0) {
      throw new Error(`the ad-block rules could not be turned off: ${result.exceptionDetails?.exception?.description ?? JSON.stringify(left)}`);
    }
  } finally {
    await cdp.send('Target.closeTarget', { targetId }).catch(() => {});
  }
}
