// GET /healthz: the database answers, and how many browsers run and wait warm.
import type { Capability } from '../capability/index.js';
import type { SessionManager } from '../sessions/index.js';
import type { Db } from '../store/db.js';

export function health(d: { db: Db; sessions: SessionManager }): Capability {
  return {
    name: 'health',
    routes(app) {
      app.get('/healthz', async (c) => {
        const browsers = { running: d.sessions.running, warm: d.sessions.warm };
        try {
          await d.db.query('SELECT 1');
          return c.json({ status: 'ok', database: d.db.kind, browsers });
        } catch {
          return c.json({ status: 'unavailable', database: d.db.kind, browsers }, 503);
        }
      });
    },
  };
}
