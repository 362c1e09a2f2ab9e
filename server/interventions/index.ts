// Interventions: code working in a session asks a person and waits (asker.ts), the person
// answers through the API (handlers.ts) or the live-view page, whose routes for it live here
// (the page polls them with its viewer ticket); and an agent's pause and resume.
import type { Hono } from 'hono';
import type { Logger } from 'pino';
import type { Capability, Signals } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { LiveView } from '../liveview/index.js';
import type { Secrets } from '../secrets/index.js';
import type { SessionLookup, SessionUrls } from '../sessions/index.js';
import type { Db } from '../store/db.js';
import { interventions as asker, type Interventions } from './asker.js';
import { answer, interventionHandlers, type AnswerDeps, type InterventionOperation } from './handlers.js';
import * as store from './store.js';

export { InterventionError, type Interventions, type Question } from './asker.js';
export type { InputType } from './store.js';

export function interventions(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  secrets: Secrets;
  sessions: SessionLookup & SessionUrls;
  liveViews: LiveView;
  /** Told: a request's and an answer's events written. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}): Capability<InterventionOperation, { interventions: Interventions }> {
  const service = asker({
    db: d.db,
    secrets: d.secrets,
    log: d.log,
    signals: d.signals,
    takeoverUrl: (id) => {
      const token = d.liveViews.mintTakeover(id);
      return token ? `${d.config.publicUrl}/live/${id}?takeover=${token}` : undefined;
    },
    liveViewUrl: async (id) => {
      const s = d.sessions.get(id);
      return s ? d.sessions.liveViewUrl(s.id, s.liveViewToken) : undefined;
    },
  });
  return {
    name: 'interventions',
    handlers: interventionHandlers({ db: d.db, secrets: d.secrets, signals: d.signals, sessions: d.sessions }),
    routes: (app) => liveViewRoutes(app, d),
    sessionHooks: { ended: (s) => store.endSession(d.db, s.id) },
    provides: { interventions: service },
  };
}

/** The live-view page's view of the session's requests, by its viewer ticket. */
function liveViewRoutes(app: Hono, d: AnswerDeps & { sessions: SessionLookup & SessionUrls; liveViews: LiveView }): void {
  const viewer = (id: string, ticket: string | undefined) => {
    const s = d.sessions.get(id);
    const grant = s && ticket ? d.liveViews.ticket(id, ticket) : undefined;
    return s && grant ? { session: s, grant } : undefined;
  };
  const headers = { 'cache-control': 'no-store' };
  app.get('/live/:id/interventions', async (c) => {
    const v = viewer(c.req.param('id'), c.req.query('ticket'));
    if (!v) return c.json({ error: { code: 404, message: 'No such live view' } }, 404, headers);
    const rows = await store.pendingOf(d.db, v.session.projectId, v.session.id);
    return c.json({ requests: rows.map((r) => ({ request_id: r.id, message: r.message, input_type: r.input_type })) }, 200, headers);
  });
  app.post('/live/:id/interventions', async (c) => {
    const v = viewer(c.req.param('id'), c.req.query('ticket'));
    if (!v) return c.json({ error: { code: 404, message: 'No such live view' } }, 404, headers);
    // A view-only viewer watches; answering is acting.
    if (!v.grant.input) return c.json({ error: { code: 403, message: 'This view is read-only' } }, 403, headers);
    const body = (await c.req.json().catch(() => undefined)) as { request_id?: unknown; response?: unknown } | undefined;
    if (typeof body?.request_id !== 'string' || typeof body.response !== 'string' || body.response.length > 10_000) {
      return c.json({ error: { code: 400, message: 'Send {request_id, response}' } }, 400, headers);
    }
    const result = await answer(d, v.session.projectId, v.session.id, body.request_id, body.response);
    if (!result.ok) return c.json({ error: { code: result.status, message: result.message } }, result.status, headers);
    return c.json({ status: 'resolved' }, 200, headers);
  });
}
