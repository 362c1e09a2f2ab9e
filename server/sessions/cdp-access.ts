// How clients reach this node's browsers: the CDP proxy's answer to who may connect to
// which session (its own token, or an API key of its project; a reservation by its token
// only), the metering of every message that passes (activity, steps, screenshots, a
// client's Browser.close), and the URLs a session is reached at. The proxy reads the table
// at each connection and counts on whichever holder the traffic belongs to at each message.
import type { Logger } from 'pino';
import { findKey } from '../auth/api-keys.js';
import { sameToken } from '../auth/tokens.js';
import { createCdpProxy, downloadsDirOf, rootPaths, type CdpProxy, type CdpTarget, type RunningBrowser } from '../browser/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import type { Counted, Reservation, SessionTable } from './live.js';
import type { RawData } from 'ws';

export class CdpAccess {
  readonly proxy: CdpProxy;

  constructor(
    private readonly o: {
      db: Db;
      config: ServiceConfig;
      log: Logger;
      table: SessionTable;
      /** A warm browser reserved under this session id (warm.ts). */
      reservation(id: string): Reservation | undefined;
    },
  ) {
    this.proxy = createCdpProxy({
      log: o.log,
      resolve: async (sessionId, credential) => {
        const s = o.table.live.get(sessionId);
        if (!s || s.ending) {
          // A reservation is reached with its own token only (it belongs to no project yet).
          const r = s ? undefined : o.reservation(sessionId);
          if (!r || !('token' in credential)) return 'not_found';
          if (!sameToken(credential.token, r.cdpToken)) return null;
          return this.target(r.sb.browser, () => r.live ?? r);
        }
        if ('token' in credential) {
          if (!sameToken(credential.token, s.cdpToken)) return null;
        } else {
          const owner = await findKey(o.db, credential.apiKey);
          if (!owner) return null;
          // Another project's session is not found, as everywhere in the API; it may also
          // have ended while the key was looked up.
          if (owner.projectId !== s.projectId || s.ending) return 'not_found';
        }
        return this.target(s.browser, () => s);
      },
    });
  }

  /** The CDP proxy's view of a browser; its traffic is counted on counted() (read at each message). */
  private target(browser: RunningBrowser, counted: () => Counted): CdpTarget {
    return {
      wsEndpoint: browser.wsEndpoint,
      downloadsDir: downloadsDirOf(browser.rootDir),
      uploadsDir: rootPaths(browser.rootDir).uploads,
      onMessage: (from, data) => meter(counted(), from, data),
    };
  }

  /** The browser's /json/version, with our cdp_url in place of its own endpoint. */
  browserEndpoint(id: string, token: string): { wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized' {
    const s = this.o.table.running(id);
    if (!s) return 'not_found';
    if (!sameToken(token, s.cdpToken)) return 'unauthorized';
    return { wsEndpoint: s.browser.wsEndpoint, cdpUrl: this.cdpUrl(id, s.cdpToken) };
  }

  /**
   * The same for the vendor SDK's address (`?apiKey=K&sessionId=S`): an API key of the
   * session's project opens it, as the CDP proxy's WebSocket of that form does. The key is
   * checked first, so a wrong one learns nothing of which sessions exist.
   */
  async browserEndpointByKey(id: string, apiKey: string): Promise<{ wsEndpoint: string; cdpUrl: string } | 'not_found' | 'unauthorized'> {
    const owner = await findKey(this.o.db, apiKey);
    if (!owner) return 'unauthorized';
    const s = this.o.table.running(id);
    // Another project's session is not found, as everywhere in the API.
    if (!s || s.projectId !== owner.projectId) return 'not_found';
    return { wsEndpoint: s.browser.wsEndpoint, cdpUrl: this.cdpUrl(id, s.cdpToken) };
  }

  /** The cdp_url of a session running here, for the server's runners of user code (the
   * sandbox), which reach the browser like any client: through the CDP proxy. */
  cdpUrlOf(id: string): string | undefined {
    const s = this.o.table.running(id);
    return s ? this.cdpUrl(id, s.cdpToken) : undefined;
  }

  cdpUrl(id: string, token: string): string {
    return `${this.o.config.publicUrl.replace(/^http/, 'ws')}/v1/cdp/${id}?token=${token}`;
  }

  liveViewUrl(id: string, token: string): string {
    return `${this.o.config.publicUrl}/live/${id}?token=${token}`;
  }
}

/**
 * What one message through the CDP proxy counts: any is activity, a client's is a step, and
 * a client's screenshot or Browser.close is told apart. The bytes are searched as they came
 * (no decoding, no parse): this runs for every message of every session.
 */
export function meter(s: Counted, from: 'client' | 'browser', data: RawData): void {
  s.lastActivity = Date.now();
  if (from !== 'client') return;
  s.steps++;
  const bytes = asBuffer(data);
  if (bytes.includes(SCREENSHOT)) s.screenshots++;
  if (bytes.includes(BROWSER_CLOSE) && isBrowserClose(bytes)) s.closeRequested = true;
}

const SCREENSHOT = Buffer.from('"Page.captureScreenshot"');
const BROWSER_CLOSE = Buffer.from('"Browser.close"');

function asBuffer(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? Buffer.from(data) : data;
}

/** Whether a CDP message from a client is the command Browser.close (not just mentions it). */
function isBrowserClose(bytes: Buffer): boolean {
  try {
    return (JSON.parse(bytes.toString()) as { method?: unknown }).method === 'Browser.close';
  } catch {
    return false;
  }
}
