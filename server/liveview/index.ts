// The live view (live-view.ts: the page at /live/{id} and its WebSocket) and the
// per-session screencast it shares with the recorder (screencast.ts), which it provides.
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { SessionLookup } from '../sessions/index.js';
import { LiveView } from './live-view.js';
import { Screencasts } from './screencast.js';

export { LiveView, type LiveViewOptions, type TicketGrant } from './live-view.js';
export { Screencasts, ScreencastHub, type Frame, type FrameMeta, type Tab } from './screencast.js';

export function liveView(d: {
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup;
}): Capability<never, { screencasts: Screencasts; liveViews: LiveView }> {
  const screencasts = new Screencasts({ quality: d.config.screencastQuality, log: d.log });
  const view = new LiveView({ sessions: d.sessions, screencasts, log: d.log, maxViewers: d.config.liveViewMaxViewers });
  return {
    name: 'liveview',
    routes: (app) => view.routes(app),
    upgrade: (req, socket, head) => view.handleUpgrade(req, socket, head),
    sessionHooks: {
      // The viewers are told before the screencast closes.
      ending: async (s) => {
        await view.ending(s);
        await screencasts.ending(s);
      },
    },
    provides: { screencasts, liveViews: view },
  };
}
