// The files of a profile that a launch writes before Chromium starts: its preferences
// (downloads, PDFs, extensions, certificates, cookies kept) and no stale locks of the
// browser that used it last.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { autoSelectCertificatePreferences, type AutoSelectCertificate } from './auto-select-certificates.js';
import { ADBLOCK, type AdblockInstall } from './adblock.js';
import { allowInNewContexts, unpackedExtensionId } from './extensions.js';
import type { LaunchOptions } from './launch-options.js';

export async function removeLocks(userDataDir: string): Promise<void> {
  // The Singleton* links and DevToolsActivePort belong to the browser that last used the
  // profile: left in place, they would make Chromium think the profile is in use elsewhere.
  const names = ['SingletonLock', 'SingletonSocket', 'SingletonCookie', 'DevToolsActivePort'];
  await Promise.all(names.map((name) => rm(join(userDataDir, name), { force: true })));
}

/**
 * Downloads go to rootDir/downloads without a prompt. A profile preference rather than
 * CDP Browser.setDownloadBehavior: it holds for the browser's whole life, whatever CDP
 * clients come and go. The exit type is reset so that a saved profile does not offer to
 * restore the pages of a browser that was killed. Without the PDF viewer, a PDF is a
 * download like any other file. Every extension loaded runs in new browser contexts too.
 *
 * "Continue where you left off" (restore_on_startup 1) is what makes Chromium write session
 * cookies (those without an expiry) to its cookie database and read them back at the next
 * start, as a desktop browser does; without it they are dropped when the browser closes, and
 * a profile saved from the session would lose the sign-ins that use them (measured on
 * Chromium 156). It restores no tabs here: a fresh root has none to restore, and a saved
 * profile is kept without its Sessions folder.
 */
export async function writeProfilePreferences(
  userDataDir: string,
  downloads: string,
  options: Pick<LaunchOptions, 'pdfViewer' | 'extensionDirs'>,
  certificates: readonly AutoSelectCertificate[],
  adblock?: AdblockInstall,
): Promise<void> {
  const file = join(userDataDir, 'Default', 'Preferences');
  let prefs: any = {};
  try {
    prefs = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    // a fresh profile
  }
  prefs.download = { ...prefs.download, default_directory: downloads, prompt_for_download: false, directory_upgrade: true };
  prefs.savefile = { ...prefs.savefile, default_directory: downloads };
  // No leak check: after a sign-in that worked (its form gone from the next page), Chromium
  // 156 sends a hash of the credentials to passwordsleakcheck-pa.googleapis.com through the
  // session's proxy, where it is metered as the session's traffic and listed among its
  // domains (background-traffic.test).
  prefs.profile = { ...prefs.profile, exit_type: 'Normal', exited_cleanly: true, password_manager_leak_detection: false };
  prefs.plugins = { ...prefs.plugins, always_open_pdf_externally: !options.pdfViewer };
  prefs.session = { ...prefs.session, restore_on_startup: 1 };
  // A saved profile may have shown the bookmarks bar: it would take height from the page.
  prefs.bookmark_bar = { ...prefs.bookmark_bar, show_on_all_tabs: false };
  // What a saved profile says of the ad-block is this launch's to say: installed from the
  // indexed copy, loaded from the root's folder (an extension directory), or not at all.
  delete prefs.extensions?.settings?.[ADBLOCK.id];
  if (adblock && 'preinstalled' in adblock) {
    prefs.extensions = { ...prefs.extensions, ui: { ...prefs.extensions?.ui, developer_mode: true } };
    prefs.extensions.settings = { ...prefs.extensions.settings, [ADBLOCK.id]: { ...adblock.preinstalled, incognito: true } };
  }
  allowInNewContexts(prefs, await Promise.all((options.extensionDirs ?? []).map(unpackedExtensionId)));
  // Always, even empty: a saved profile's rules name certificates this session may not hold.
  autoSelectCertificatePreferences(prefs, certificates);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(prefs));
}
