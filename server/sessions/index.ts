// Sessions: browsers' lifecycle on this node (manager.ts), the Sessions and CDP operations
// (handlers.ts), and the CDP proxy's WebSocket upgrade. Every capability that acts on
// sessions takes the role of the SessionManager it uses (roles.ts), not the class.
import type { Context } from 'hono';
import type { Logger } from 'pino';
import type { Capability, SessionHooks, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { ServiceProxyPool } from '../net/service-proxies.js';
import type { RateLimits } from '../http/rate-limit/index.js';
import type { Db } from '../store/db.js';
import { sessionHandlers, type SessionHandlers } from './handlers.js';
import { SessionManager } from './manager.js';

export { SessionManager } from './manager.js';
export type { CreateOptions, CreateResult } from './create.js';
export type { NodeLoad, SessionLifecycle, SessionLookup, SessionUrls, WarmSource } from './roles.js';
export type { WarmReservation } from './warm.js';
export type { SessionCreateBody } from './options.js';
export {
  EARLIEST_HISTORY,
  EARLIEST_HISTORY_MESSAGE,
  findSessionRecord,
  historyBuckets,
  listSessions,
  type Granularity,
  type ListFilter,
  type SessionRow,
  type SessionStatus,
} from './store.js';

export function sessions(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessionHooks: SessionHooks;
  rateLimits: RateLimits;
  signals: Pick<Signals, 'endRecorded' | 'deliveriesWritten'>;
}): Capability<keyof SessionHandlers, { sessions: SessionManager }> {
  // The operator's service proxies, one pool for the server: their health is shared by every session.
  const manager = new SessionManager({ ...d, serviceProxies: new ServiceProxyPool(d.config.serviceProxyPool, { log: d.log }) });
  return {
    name: 'sessions',
    handlers: sessionHandlers({ db: d.db, sessions: manager }),
    upgrade: (req, socket, head) => manager.cdpProxy.handleUpgrade(req, socket, head),
    routes(app) {
      // Playwright's connectOverCDP, given the http form of an address, reads
      // `<endpoint>/json/version/`, with a trailing slash the contract's paths do not have;
      // the vendor SDK's address (`http://HOST?apiKey=K&sessionId=S`) makes it `/json/version/`.
      const withoutSlash = (c: Context) => {
        const url = new URL(c.req.url);
        url.pathname = url.pathname.slice(0, -1);
        return app.fetch(new Request(url, c.req.raw), c.env);
      };
      app.get('/v1/cdp/:session_id/json/version/', withoutSlash);
      app.get('/json/version/', withoutSlash);
    },
    provides: { sessions: manager },
    start: () => manager.start(),
    // A dead node's sessions: failed with browser_pod_not_found, once.
    recoverNode: async (node) => void (await manager.failSessionsOf(node)),
    // Ends every session while the capabilities that follow them are still up.
    drain: () => manager.stop(),
  };
}
