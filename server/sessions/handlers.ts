// The Sessions and CDP operations of the contract.
import type { Db } from '../store/db.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { components } from '../../generated/types.js';
import { versionDocument } from '../browser/index.js';
import type { SessionLifecycle, SessionLookup, SessionUrls } from './roles.js';
import * as store from './store.js';

type Session = components['schemas']['Session'];
type HistoryPoint = components['schemas']['HistoryPoint'];
type HistoryMetrics = components['schemas']['HistoryMetrics'];

const allMetrics: store.HistoryMetric[] = ['session_count', 'credits_used', 'proxy_bytes', 'session_hours', 'screenshots', 'network_bytes_total'];
/** More periods than this in one answer is a mistake (hourly over years), not a report. */
const MAX_PERIODS = 10_000;
const periodHours: Record<store.Granularity, number> = { hour: 1, day: 24, week: 168, month: 744 };

export type SessionHandlers = Pick<
  AppHandlers,
  | 'createSession'
  | 'getSession'
  | 'listSessions'
  | 'listSessionStatuses'
  | 'endSession'
  | 'endAllSessions'
  | 'replaceSessionTags'
  | 'getSessionHistory'
  | 'listSessionPages'
  | 'connectCdp'
  | 'getCdpVersion'
  | 'getCdpDiscoveryVersion'
>;

/** The newest this many are listed by GET /v1/sessions/all/status; count covers them all. */
const MAX_STATUS_ITEMS = 1_000;

export function sessionHandlers({ db, sessions }: { db: Db; sessions: SessionLookup & SessionLifecycle & SessionUrls }): SessionHandlers {
  const record = (row: store.SessionRow): Session => ({
    id: row.id,
    // The vendor's names, which its SDKs read.
    session_id: row.id,
    team_id: row.project_id,
    playground: false,
    status: row.status,
    created_at: row.created_at.toISOString(),
    ended_at: row.ended_at?.toISOString() ?? null,
    duration: Math.floor(((row.ended_at ?? new Date()).getTime() - row.created_at.getTime()) / 1000),
    tags: row.tags,
    configuration: row.configuration,
    credits_used: row.credits_used,
    proxy_bytes: row.proxy_bytes,
    network_bytes_total: row.network_bytes_total,
    steps: row.steps,
    screenshots: row.screenshots,
    cdp_url: sessions.cdpUrl(row.id, row.cdp_token),
    live_view_url: sessions.liveViewUrl(row.id, row.live_view_token),
    end_reason: row.end_reason,
    ...(row.identities ? { identities: row.identities } : {}),
  });

  /** Ends a session and removes it from the API, whatever state it is in; answers its final status. */
  const endAndRemove = async (row: store.SessionRow): Promise<'completed' | 'failed'> => {
    if (row.status === 'completed' || row.status === 'failed') {
      // Already ended (a timeout, a crash): the DELETE removes it from the API all the same.
      await store.markDeleted(db, row.project_id, row.id);
      return row.status;
    }
    // While the database cannot record the end, the request answers 503 at once; the
    // browser is gone, and the end (deleted, as asked) is recorded once it can be.
    const ended = await sessions.end(row.id, 'completed', 'api', { deleted: true, answerNow: true });
    // Unless this DELETE recorded the end, the end that did (a timeout, a crash, a client's
    // Browser.close, in progress when the DELETE came) left the session addressable.
    if (!ended || ended.deleted_at === null) await store.markDeleted(db, row.project_id, row.id);
    return ended?.status === 'failed' ? 'failed' : 'completed';
  };

  return {
    async createSession(req, ctx) {
      const result = await sessions.create(ctx, req.body);
      if (!result.ok) {
        const answer = fail(result.status, result.message);
        return result.retryAfterSeconds === undefined ? answer : { ...answer, headers: { 'Retry-After': String(result.retryAfterSeconds) } };
      }
      return { status: 200, body: { data: { id: result.id, cdp_url: result.cdpUrl, live_view_url: result.liveViewUrl } } };
    },

    async getSession(req, ctx) {
      const row = await store.getSession(db, ctx.projectId, req.params.session_id);
      return row ? { status: 200, body: { data: record(row) } } : fail(404, 'Session not found');
    },

    async listSessions(req, ctx) {
      const { page = 1, limit = 20 } = req.query;
      const { rows, total } = await store.listSessions(db, ctx.projectId, {
        page,
        limit,
        status: req.query.status,
        tags: req.query.tags,
        createdFrom: req.query.created_from,
        createdTo: req.query.created_to,
        batchId: req.query.batch_id,
      });
      return { status: 200, body: { data: rows.map(record), pagination: { page, limit, total, total_pages: Math.ceil(total / limit) } } };
    },

    async endSession(req, ctx) {
      const row = await store.getSession(db, ctx.projectId, req.params.session_id);
      if (!row) return fail(404, 'Session not found');
      return { status: 200, body: { data: { status: await endAndRemove(row) } } };
    },

    async endAllSessions(_req, ctx) {
      const rows = await store.unfinishedOfProject(db, ctx.projectId);
      await Promise.all(rows.map(endAndRemove));
      return { status: 200, body: { data: { status: 'completed', ended: rows.length } } };
    },

    async listSessionStatuses(req, ctx) {
      const q = req.query;
      const { rows, total } = await store.listSessions(db, ctx.projectId, {
        page: 1,
        limit: MAX_STATUS_ITEMS,
        tags: q.tags,
        domains: q.domains,
        createdFrom: q.created_from,
        createdTo: q.created_to,
        batchId: q.batch_id,
        proxy: q.proxy,
        extraStealth: q.extra_stealth,
        profileName: q.profile_name,
      });
      const items = rows.map((r) => ({ session_id: r.id, status: r.status, tags: r.tags, created_at: r.created_at.toISOString() }));
      return { status: 200, body: { data: { count: total, items } } };
    },

    async replaceSessionTags(req, ctx) {
      const ok = await store.setTags(db, ctx.projectId, req.params.session_id, req.body.tags);
      if (!ok) return fail(404, 'Session not found');
      return { status: 200, body: { success: true, message: `Tags replaced (${req.body.tags.length})` } };
    },

    async getSessionHistory(req, ctx) {
      const to = req.query.to_date ? new Date(req.query.to_date) : new Date();
      const from = req.query.from_date ? new Date(req.query.from_date) : new Date(to.getTime() - 30 * 86_400_000);
      if (from >= to) return fail(400, 'from_date must be before to_date');
      if (from < store.EARLIEST_HISTORY) return fail(400, store.EARLIEST_HISTORY_MESSAGE);
      const granularity = req.query.granularity ?? 'day';
      if ((to.getTime() - from.getTime()) / 3_600_000 / periodHours[granularity] > MAX_PERIODS) {
        return fail(400, `The range holds more than ${MAX_PERIODS} periods of one ${granularity}; choose a longer granularity`);
      }
      const metrics = req.query.metrics ?? allMetrics;
      const buckets = await store.historyBuckets(db, ctx.projectId, from, to, granularity);
      const { page = 1, limit = 20 } = req.query;
      const summary: HistoryMetrics = {};
      for (const m of metrics) summary[m] = buckets.reduce((sum, b) => sum + b[m], 0);
      const data: HistoryPoint[] = buckets.slice((page - 1) * limit, page * limit).map((b) => {
        const point: HistoryPoint = { date: b.date.toISOString() };
        for (const m of metrics) point[m] = b[m];
        return point;
      });
      return {
        status: 200,
        body: { data, summary, pagination: { page, limit, total: buckets.length, total_pages: Math.ceil(buckets.length / limit) } },
      };
    },

    async listSessionPages(req, ctx) {
      const row = await store.getSession(db, ctx.projectId, req.params.session_id);
      if (!row) return fail(404, 'Session not found');
      const pages = await sessions.pages(row.id);
      if (!pages) return fail(409, `Session is ${row.status}`);
      return { status: 200, body: { data: pages.map((p) => ({ id: p.targetId, url: p.url, title: p.title, active: p.active })) } };
    },

    async connectCdp(req) {
      const found = sessions.browserEndpoint(req.params.session_id, req.query.token);
      if (found === 'not_found') return fail(404, 'Session not found or ended');
      if (found === 'unauthorized') return fail(401, 'Invalid CDP token');
      if (/application\/json/.test(req.headers.get('accept') ?? '')) {
        return { status: 200, body: (await versionDocument(found.wsEndpoint, found.cdpUrl)) as components['schemas']['CdpVersion'] };
      }
      return fail(426, 'Connect with a WebSocket client (Upgrade: websocket), e.g. Playwright connectOverCDP');
    },

    async getCdpDiscoveryVersion(req) {
      const found = await sessions.browserEndpointByKey(req.query.sessionId, req.query.apiKey);
      if (found === 'not_found') return fail(404, 'Session not found or ended');
      if (found === 'unauthorized') return fail(401, 'Invalid API key');
      return { status: 200, body: (await versionDocument(found.wsEndpoint, found.cdpUrl)) as components['schemas']['CdpVersion'] };
    },

    async getCdpVersion(req) {
      const found = sessions.browserEndpoint(req.params.session_id, req.query.token);
      if (found === 'not_found') return fail(404, 'Session not found or ended');
      if (found === 'unauthorized') return fail(401, 'Invalid CDP token');
      return { status: 200, body: (await versionDocument(found.wsEndpoint, found.cdpUrl)) as components['schemas']['CdpVersion'] };
    },
  };
}
