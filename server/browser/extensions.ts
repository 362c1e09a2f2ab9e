// Extensions of our own that some session options load (extensions/): each a content
// script in the page's own world, in every page and frame the browser opens, the ones a
// user's CDP client opens included, at no cost per page to the server.
import { createHash } from 'node:crypto';
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = (name: string) => fileURLToPath(new URL(`./extensions/${name}/`, import.meta.url));

export const BUILT_IN_EXTENSIONS = {
  /** browser.disable_dialogs */
  noDialogs: dir('no-dialogs'),
  /** browser.force_popups_as_tabs */
  popupsAsTabs: dir('popups-as-tabs'),
} as const;

/** Chromium's extension id from bytes: the first 128 bits of their SHA-256, a–p for each hex digit. */
function idOf(bytes: Buffer): string {
  const hex = createHash('sha256').update(bytes).digest('hex').slice(0, 32);
  return [...hex].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
}

/** The id of an extension with a `key` in its manifest: derived from the key, wherever it is loaded from. */
export function extensionId(key: string): string {
  return idOf(Buffer.from(key, 'base64'));
}

/**
 * The id Chromium gives an unpacked extension loaded from `dir`: from its manifest's key, or
 * else from its absolute path (what --load-extension does without a key).
 */
export async function unpackedExtensionId(dir: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as { key?: unknown };
  if (typeof manifest.key === 'string') return extensionId(manifest.key);
  return idOf(Buffer.from(await realpath(dir)));
}

/**
 * Lets extensions run in the browser contexts a client makes (Playwright's newContext,
 * Target.createBrowserContext), which are off the record: there, Chromium runs only the
 * extensions a profile preference allows. Every extension a session loads, ours and the
 * user's, is meant for every page of the session.
 */
export function allowInNewContexts(prefs: any, ids: readonly string[]): void {
  prefs.extensions ??= {};
  prefs.extensions.settings ??= {};
  for (const id of ids) prefs.extensions.settings[id] = { ...prefs.extensions.settings[id], incognito: true };
}
