// How a session is reached, without a browser: the URLs it is given, and the /json/version
// lookup, which hands a browser's endpoint to its session's own token only, and only while
// the session runs (not while it ends). The proxy's admission and metering of CDP traffic
// are in cdp.test.ts, against real browsers.
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { CdpAccess } from './cdp-access.js';
import { SessionTable, type LiveSession } from './live.js';

const config = { ...loadConfig({}), publicUrl: 'https://browsers.example' };
const wsEndpoint = 'ws://127.0.0.1:9/devtools/browser/b';

function access(table = new SessionTable()): CdpAccess {
  return new CdpAccess({ db: undefined as never, config, log: pino({ level: 'silent' }), table, reservation: () => undefined });
}

function session(over: Partial<LiveSession> = {}): LiveSession {
  return { id: 's1', projectId: 'p', cdpToken: 'tok', browser: { wsEndpoint }, ...over } as LiveSession;
}

describe('CdpAccess', () => {
  it('gives the cdp_url on ws(s) and the live view on http(s), each with its token', () => {
    const a = access();
    try {
      expect(a.cdpUrl('s1', 'tok')).toBe('wss://browsers.example/v1/cdp/s1?token=tok');
      expect(a.liveViewUrl('s1', 'lv')).toBe('https://browsers.example/live/s1?token=lv');
    } finally {
      a.proxy.close();
    }
  });

  it("hands a browser's endpoint to its session's token only, and only while the session runs", () => {
    const table = new SessionTable();
    const a = access(table);
    try {
      expect(a.browserEndpoint('s1', 'tok')).toBe('not_found');
      expect(a.cdpUrlOf('s1')).toBeUndefined();
      table.live.set('s1', session());
      expect(a.browserEndpoint('s1', 'other')).toBe('unauthorized');
      expect(a.browserEndpoint('s1', 'tok')).toEqual({ wsEndpoint, cdpUrl: 'wss://browsers.example/v1/cdp/s1?token=tok' });
      expect(a.cdpUrlOf('s1')).toBe('wss://browsers.example/v1/cdp/s1?token=tok');
      table.live.set('s1', session({ ending: Promise.resolve(undefined) }));
      expect(a.browserEndpoint('s1', 'tok')).toBe('not_found');
      expect(a.cdpUrlOf('s1')).toBeUndefined();
    } finally {
      a.proxy.close();
    }
  });
});
