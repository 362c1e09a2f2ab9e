// The web console at /console: a project's sessions (live list, one session with its live
// view, take-over, pages, recording, events and downloads), batches, webhooks with their
// deliveries, usage, API keys, profiles and extensions, for a user signed in with an API
// key. Server-rendered HTML (layout.ts says why), served by this server, nothing from a
// CDN. Composed after the capabilities it shows: it reads them through the API in process
// (api.ts) and through their index.ts.
import type { Capability, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { LiveView } from '../liveview/index.js';
import type { Secrets } from '../secrets/index.js';
import type { Db } from '../store/db.js';
import { ConsoleAuth } from './auth.js';
import { consoleRoutes } from './routes.js';

export function webConsole(d: {
  db: Db;
  config: ServiceConfig;
  secrets: Secrets;
  liveViews: LiveView;
  /** Told: a delivery retried from the console is due. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}): Capability {
  const auth = new ConsoleAuth({ db: d.db, secrets: d.secrets, publicUrl: d.config.publicUrl });
  return {
    name: 'console',
    routes: (app) => consoleRoutes(app, { db: d.db, auth, liveViews: d.liveViews, publicUrl: d.config.publicUrl, signals: d.signals }),
  };
}
