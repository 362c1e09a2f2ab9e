// browser.extra_stealth: the web fetch tool's fingerprint hardening (page/stealth.ts:
// navigator.webdriver false, a window frame around the page, a desktop GPU's WebGL names)
// in every page and frame of a session, the ones its user's CDP client opens included. A
// content script of a small extension written into the browser's root at launch, in the
// page's own world before its scripts run: the same script as the tool's, with no per-page
// work of the server's and nothing for a CDP client to see (Playwright's addInitScript would
// only cover the contexts of the client that set it).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stealthScript } from '../page/stealth.js';

const KEY =
  'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAn3P5IKPEQ8vlAau+IKjXO/X/9D8DgrYGwEyk/Zed0jzMnfjh6alS9PWvSK86bu91JIS2OZHikY3bPxXh1rfjSv0aLahBTD7hwIV7rbgTKiOdQCRhr2FNrcIhFcOqmy9FPdm1TnP9GQHnUyfu1sJJhag71wXX5abq/K44fBaT9mCAykIz6DWTC5CztqlD3iWCkkAiW2E1S8eyW7B3vKH0WpYngdqWaCFcbGhKDcbgQLUhdgMQ/19RBZL88BkJjqbuwcYKxJz8oiT7S3eWI+R3gC8atxMox6jPrP/2Ex4iYhwon0Fv2aYEst4qP1acWuPB7lKE1pl9uB92Ng60A/CnOwIDAQAB';
const MANIFEST = {
  manifest_version: 3,
  name: 'Stealth',
  version: '1.0.0',
  description: 'browser.extra_stealth: fingerprint hardening in every page and frame.',
  content_scripts: [
    {
      matches: ['<all_urls>'],
      match_about_blank: true,
      match_origin_as_fallback: true,
      all_frames: true,
      run_at: 'document_start',
      world: 'MAIN',
      js: ['main.js'],
    },
  ],
};

/** Writes the extension into the root; answers its folder. */
export async function installStealth(rootDir: string): Promise<string> {
  const dir = join(rootDir, 'stealth');
  await mkdir(dir);
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(MANIFEST));
  await writeFile(join(dir, 'main.js'), stealthScript);
  return dir;
}
