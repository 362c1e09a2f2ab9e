// Where a browser's downloads go, and keeping them there whatever a CDP client asks.
//
// Chromium writes downloads to the folder its profile names (rootDir/downloads, see
// launch.ts) until a CDP client sets a download behavior: Playwright's connectOverCDP sets
// `Browser.setDownloadBehavior {behavior: allowAndName, downloadPath: <a temporary folder
// of the client's machine>}` for every context it sees, Puppeteer does when asked, and any
// client may name any path. Chromium creates that folder and writes there (measured with
// Chromium 156), so a client could have the browser write anywhere the server's user may,
// outside the root that is removed when the session ends. The CDP proxy therefore points
// every download behavior a client sets at the root's downloads folder: the client still
// decides whether downloads are allowed, never where they go.
import { join } from 'node:path';

/** The downloads folder of a browser root. */
export function downloadsDirOf(rootDir: string): string {
  return join(rootDir, 'downloads');
}

const SETTERS = new Set(['Browser.setDownloadBehavior', 'Page.setDownloadBehavior']);

/**
 * A CDP client's message with the download folder of every download behavior it sets
 * replaced by `dir`; undefined to send the message as it came (nearly every message).
 *
 * Only messages that could set one are parsed: those that name it, and those with a `\u`
 * escape, which could spell the method's name in escapes (Chromium decodes them). A parsed
 * message is sent as it was parsed, not as it came, so the browser reads exactly what was
 * checked (a key given twice, for one, is sent once). `Target.sendMessageToTarget` carries
 * a message inside a string: that one is checked the same way.
 */
export function pinDownloadPath(data: Buffer, dir: string): Buffer | undefined {
  if (!data.includes('DownloadBehavior') && !data.includes('\\u')) return undefined;
  let message: unknown;
  try {
    message = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined; // the browser refuses it as well
  }
  pin(message, dir);
  return Buffer.from(JSON.stringify(message));
}

function pin(message: unknown, dir: string): void {
  if (!isObject(message) || !isObject(message.params)) return;
  const params = message.params;
  if (typeof message.method === 'string' && SETTERS.has(message.method)) {
    // `allow` and `allowAndName` need a folder; `deny` and `default` ignore it.
    if (params.behavior === 'allow' || params.behavior === 'allowAndName' || 'downloadPath' in params) params.downloadPath = dir;
  } else if (message.method === 'Target.sendMessageToTarget' && typeof params.message === 'string') {
    let inner: unknown;
    try {
      inner = JSON.parse(params.message);
    } catch {
      return;
    }
    pin(inner, dir);
    params.message = JSON.stringify(inner);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
