// The console's routes under /console: sign-in and sign-out, then every page behind the
// signed-in check. Reads and actions go through the API in process (api.ts) with the
// signed-in key; API keys, a session's events, a delivery's retry and the session rows
// (the API forgets a session a DELETE ended) through the stores that own them, limited to
// the signed-in project. Every POST carries the CSRF token.
import type { Signals } from '../capability/index.js';
import type { Context, Hono } from 'hono';
import type { components } from '../../generated/types.js';
import { createKey, listKeys, revokeKey } from '../admin/index.js';
import { retryDelivery } from '../events/index.js';
import { findSessionRecord, listSessions, type SessionStatus } from '../sessions/index.js';
import type { LiveView } from '../liveview/index.js';
import { EVENT_TYPES } from '../outbox/types.js';
import type { Db } from '../store/db.js';
import { ApiError, consoleApi, type ConsoleApi } from './api.js';
import { CSS, JS } from './assets.js';
import { ConsoleAuth, csrfMatches, type SignedIn } from './auth.js';
import { html, page, type Markup } from './layout.js';
import { batchesView, extensionsView, keysView, profilesView, signInView, taskView, tasksView, usageView, webhooksView, webhookView } from './project-views.js';
import { sessionsView, sessionView, STATUSES, type Download, type Recording, type SessionPage } from './session-views.js';
import { sessionEvents } from './store.js';

type S = components['schemas'];

export interface ConsoleDeps {
  db: Db;
  auth: ConsoleAuth;
  liveViews: Pick<LiveView, 'mintTakeover' | 'mintWatch'>;
  publicUrl: string;
  /** Told: a delivery retried from the console is due. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}

/** Form bodies are a few fields: more is not a console form. */
const MAX_FORM_BYTES = 16 * 1024;
const USAGE_DAYS = 30;

interface Ctx {
  c: Context;
  user: SignedIn;
  api: ConsoleApi;
}

export function consoleRoutes(app: Hono, d: ConsoleDeps): void {
  const securityHeaders = (c: Context) => {
    const media = new URL(d.publicUrl).origin;
    c.header(
      'content-security-policy',
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' ${media}; frame-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
    );
    c.header('cache-control', 'no-store');
    c.header('referrer-policy', 'same-origin');
    c.header('x-content-type-options', 'nosniff');
  };

  const render = (c: Context, user: SignedIn | undefined, title: string, here: string | undefined, body: Markup, status = 200) => {
    securityHeaders(c);
    return c.html(page({ title, here, csrf: user?.csrf, body }), status as 200);
  };

  const signInAddress = (c: Context) => `/console/sign-in?next=${encodeURIComponent(new URL(c.req.url).pathname + new URL(c.req.url).search)}`;

  /** A page or action for the signed-in user; others go to the sign-in page (GET) or get 403 (POST). */
  const signedIn =
    (fn: (x: Ctx) => Promise<Response>, method: 'GET' | 'POST') =>
    async (c: Context): Promise<Response> => {
      const user = await d.auth.current(c);
      if (!user) {
        if (method === 'GET') return c.redirect(signInAddress(c), 303);
        securityHeaders(c);
        return c.text('Signed out: sign in again', 403);
      }
      if (method === 'POST') {
        const form = await readForm(c);
        if (!form || !csrfMatches(user, form._csrf)) {
          securityHeaders(c);
          return c.text('Refused: this form is missing its CSRF token, or the token is not this session’s. Reload the page and try again.', 403);
        }
        c.set('form' as never, form as never);
      }
      try {
        return await fn({ c, user, api: consoleApi(app, user.key) });
      } catch (err) {
        if (err instanceof ApiError) {
          // The key was revoked while the page was being made.
          if (err.status === 401) return c.redirect(signInAddress(c), 303);
          return render(c, user, 'Error', undefined, errorView(err.message), err.status === 404 ? 404 : 400);
        }
        throw err;
      }
    };
  const get = (path: string, fn: (x: Ctx) => Promise<Response>) => app.get(path, signedIn(fn, 'GET'));
  const post = (path: string, fn: (x: Ctx) => Promise<Response>) => app.post(path, signedIn(fn, 'POST'));
  const form = (c: Context) => c.get('form' as never) as unknown as Record<string, string>;
  const refreshing = (c: Context) => c.req.header('x-console-refresh') === '1';

  app.get('/console/assets/console.css', (c) => c.body(CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600' }));
  app.get('/console/assets/console.js', (c) => c.body(JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' }));

  app.get('/console', (c) => c.redirect('/console/sessions', 303));
  app.get('/console/', (c) => c.redirect('/console/sessions', 303));

  app.get('/console/sign-in', async (c) => {
    if (await d.auth.current(c)) return c.redirect(safeNext(c.req.query('next')), 303);
    return render(c, undefined, 'Sign in', undefined, signInView({ token: d.auth.loginToken(c), next: safeNext(c.req.query('next')) }));
  });
  app.post('/console/sign-in', async (c) => {
    const f = await readForm(c);
    const next = safeNext(f?.next);
    if (!f || !d.auth.loginTokenMatches(c, f._login)) {
      return render(c, undefined, 'Sign in', undefined, signInView({ token: d.auth.loginToken(c), next, error: 'The sign-in form expired: try again.' }), 403);
    }
    const key = (f.api_key ?? '').trim();
    if (!key || !(await d.auth.signIn(c, key))) {
      return render(
        c,
        undefined,
        'Sign in',
        undefined,
        signInView({ token: d.auth.loginToken(c), next, error: 'That API key is not valid (or was revoked).' }),
        401,
      );
    }
    return c.redirect(next, 303);
  });
  post('/console/sign-out', async ({ c }) => {
    d.auth.signOut(c);
    return c.redirect('/console/sign-in', 303);
  });

  get('/console/sessions', async ({ c, user }) => {
    const status = (STATUSES as readonly string[]).includes(c.req.query('status') ?? '') ? c.req.query('status')! : '';
    const tag = (c.req.query('tag') ?? '').trim();
    const batch = (c.req.query('batch_id') ?? '').trim();
    const pageNo = Math.max(1, Math.min(10_000, Number.parseInt(c.req.query('page') ?? '1', 10) || 1));
    const limit = 50;
    // The store rather than GET /v1/sessions: that forgets sessions a DELETE ended.
    const list = await listSessions(d.db, user.projectId, {
      page: pageNo,
      limit,
      includeDeleted: true,
      ...(status ? { status: status as SessionStatus } : {}),
      ...(tag ? { tags: [tag] } : {}),
      ...(batch ? { batchId: batch } : {}),
    });
    return render(
      c,
      user,
      'Sessions',
      'sessions',
      sessionsView({ list: list.rows, total: list.total, status, tag, page: pageNo, pages: Math.max(1, Math.ceil(list.total / limit)) }),
    );
  });

  get('/console/sessions/:id', async ({ c, user, api }) => {
    const id = c.req.param('id')!;
    const s = await findSessionRecord(d.db, user.projectId, id);
    if (!s) throw new ApiError(404, 'Session not found');
    const live = s.status === 'running' || s.status === 'starting';
    const [pages, recordings, downloads, events] = await Promise.all([
      live
        ? api.get<{ data: SessionPage[] }>(`/v1/sessions/${s.id}/pages`).then(
            (r) => r.data,
            () => undefined,
          )
        : undefined,
      api.get<{ data: { items: Recording[] } }>(`/v1/sessions/${s.id}/recordings`).then(
        (r) => r.data.items,
        () => [] as Recording[],
      ),
      api.get<{ data: { items: Download[] } }>(`/v1/sessions/${s.id}/downloads`).then(
        (r) => r.data.items,
        () => [] as Download[],
      ),
      sessionEvents(d.db, user.projectId, s.id),
    ]);
    const control = c.req.query('control') === '1';
    const refresh = refreshing(c);
    // A refresh of the page's live parts does not touch the embedded view: no new ticket.
    const liveSrc = live && !refresh ? liveViewPath(d.liveViews, s.id, control) : undefined;
    return render(c, user, `Session ${s.id}`, 'sessions', sessionView({ s, csrf: user.csrf, liveSrc, control, refresh, pages, recordings, downloads, events }));
  });

  post('/console/sessions/:id/end', async ({ c, api }) => {
    const id = c.req.param('id')!;
    await api.send('DELETE', `/v1/sessions/${encodeURIComponent(id)}`);
    return c.redirect(`/console/sessions/${encodeURIComponent(id)}`, 303);
  });

  // Download links of the API need the key in a header: the console passes the file through.
  get('/console/sessions/:id/downloads/:download', async ({ c, api }) => {
    const res = await api.raw(`/v1/sessions/${encodeURIComponent(c.req.param('id')!)}/downloads/${encodeURIComponent(c.req.param('download')!)}`);
    if (res.status === 401) return c.redirect(signInAddress(c), 303);
    const headers = new Headers();
    for (const h of ['content-type', 'content-length', 'content-disposition']) {
      const v = res.headers.get(h);
      if (v) headers.set(h, v);
    }
    headers.set('x-content-type-options', 'nosniff');
    headers.set('cache-control', 'no-store');
    return new Response(res.body, { status: res.status, headers });
  });

  get('/console/batches', async ({ c, user, api }) => {
    const list = await api.get<S['BatchList']>('/v1/batch-sessions?limit=100');
    return render(c, user, 'Batches', 'batches', batchesView(list.data));
  });

  get('/console/webhooks', async ({ c, user, api }) => {
    const list = await api.get<S['WebhookListResponse']>('/v1/webhooks?limit=100');
    return render(c, user, 'Webhooks', 'webhooks', webhooksView(list.data));
  });

  const webhookPage = async ({ c, user, api }: Ctx, message?: { kind: 'ok' | 'error'; text: string }) => {
    const id = encodeURIComponent(c.req.param('id')!);
    const [w, deliveries] = await Promise.all([
      api.get<S['Webhook']>(`/v1/webhooks/${id}`),
      api.get<S['WebhookDeliveryListResponse']>(`/v1/webhooks/${id}/events?limit=100`),
    ]);
    return render(c, user, `Webhook ${w.id}`, 'webhooks', webhookView({ w, deliveries: deliveries.data, eventTypes: EVENT_TYPES, csrf: user.csrf, message }));
  };
  // After an action, its page again, by GET (so a reload does not repeat it, and the live
  // parts refresh from a real address), told what happened by a fixed code and an id.
  get('/console/webhooks/:id', (x) => {
    const sent = x.c.req.query('sent');
    const retried = x.c.req.query('retried');
    const ok = (id: string | undefined) => id !== undefined && /^[A-Za-z0-9_-]{1,64}$/.test(id);
    if (ok(sent)) return webhookPage(x, { kind: 'ok', text: `Test event ${sent} queued.` });
    if (ok(retried)) return webhookPage(x, { kind: 'ok', text: `Retry queued: delivery ${retried}.` });
    return webhookPage(x);
  });

  post('/console/webhooks/:id/test', async (x) => {
    const id = encodeURIComponent(x.c.req.param('id')!);
    try {
      const r = await x.api.send<S['WebhookTestResponse']>('POST', `/v1/webhooks/${id}/test`, { event_type: form(x.c).event_type });
      return x.c.redirect(`/console/webhooks/${id}?sent=${encodeURIComponent(r.event_id)}`, 303);
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) return webhookPage(x, { kind: 'error', text: err.message });
      throw err;
    }
  });

  post('/console/webhooks/:id/deliveries/:delivery/retry', async (x) => {
    const r = await retryDelivery(d.db, d.signals, x.user.projectId, x.c.req.param('id')!, x.c.req.param('delivery')!);
    if (!r) throw new ApiError(404, 'Delivery not found');
    return x.c.redirect(`/console/webhooks/${encodeURIComponent(x.c.req.param('id')!)}?retried=${encodeURIComponent(r.delivery_id)}`, 303);
  });

  get('/console/usage', async ({ c, user, api }) => {
    const today = new Date();
    const to = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + 1));
    const from = new Date(to.getTime() - USAGE_DAYS * 86_400_000);
    const q = new URLSearchParams({ from_date: from.toISOString(), to_date: to.toISOString(), granularity: 'day' });
    const b = await api.get<S['BillingResponse']>(`/v1/billing?${q}`);
    return render(c, user, 'Usage', 'usage', usageView(b.data));
  });

  const keysPage = async ({ c, user }: Ctx, extra: { created?: { key: string; name: string | null }; message?: string } = {}) =>
    render(c, user, 'API keys', 'keys', keysView({ keys: await listKeys(d.db, user.projectId), current: user.apiKeyId, csrf: user.csrf, ...extra }));
  get('/console/keys', (x) => keysPage(x, x.c.req.query('revoked') === '1' ? { message: 'Key revoked: it answers 401 from now on.' } : {}));

  post('/console/keys', async (x) => {
    const name = (form(x.c).name ?? '').trim().slice(0, 100) || null;
    const made = await createKey(d.db, x.user.projectId, name);
    if (!made) throw new ApiError(404, 'Project not found');
    // Shown in this answer only (no redirect, no-store): it is not kept anywhere readable.
    return keysPage(x, { created: { key: made.key, name } });
  });

  post('/console/keys/:id/revoke', async (x) => {
    const id = x.c.req.param('id')!;
    // Only a key of the signed-in project: the admin store's revoke takes any id.
    const mine = (await listKeys(d.db, x.user.projectId)).some((k) => k.id === id);
    if (!mine) throw new ApiError(404, 'API key not found');
    await revokeKey(d.db, id);
    if (id === x.user.apiKeyId) {
      d.auth.signOut(x.c);
      return x.c.redirect('/console/sign-in', 303);
    }
    return x.c.redirect('/console/keys?revoked=1', 303);
  });

  get('/console/profiles', async ({ c, user, api }) => {
    const list = await api.get<S['ProfileListResponse']>('/v1/profiles?limit=100');
    return render(c, user, 'Profiles', 'profiles', profilesView(list.data.items));
  });

  get('/console/extensions', async ({ c, user, api }) => {
    const list = await api.get<S['ExtensionListResponse']>('/v1/extensions');
    return render(c, user, 'Extensions', 'extensions', extensionsView(list.data));
  });

  get('/console/tasks', async ({ c, user, api }) => {
    const list = await api.get<S['TaskListResponse']>('/v1/task?limit=100');
    return render(c, user, 'Tasks', 'tasks', tasksView(list.data.tasks));
  });

  get('/console/tasks/:id', async ({ c, user, api }) => {
    const id = encodeURIComponent(c.req.param('id')!);
    const task = await api.get<S['TaskResponse']>(`/v1/task/${id}`);
    const runs = await api.get<S['TaskExecutionListResponse']>(`/v1/task/${id}/executions?limit=100`);
    return render(c, user, task.data.name, 'tasks', taskView(task.data, runs.data.results));
  });
}

/** The embedded live view: a takeover link (input, even in a read-only session) or a watch link. */
function liveViewPath(views: Pick<LiveView, 'mintTakeover' | 'mintWatch'>, id: string, control: boolean): string | undefined {
  const token = control ? views.mintTakeover(id) : views.mintWatch(id);
  return token && `/live/${id}?${control ? 'takeover' : 'watch'}=${token}`;
}

const errorView = (message: string) =>
  html`<h1>Not available</h1>
    <div class="notice error">${message}</div>
    <p><a href="/console/sessions">Back to sessions</a></p>`;

/** A url-encoded form of a few fields, or undefined when it is not one. */
async function readForm(c: Context): Promise<Record<string, string> | undefined> {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return undefined;
  if (Number(c.req.header('content-length') ?? 0) > MAX_FORM_BYTES) return undefined;
  const text = await c.req.text();
  if (text.length > MAX_FORM_BYTES) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(text)) out[k] = v;
  return out;
}

/** Only a console address is a place to go after signing in (no open redirect). */
function safeNext(next: string | undefined): string {
  return next && /^\/console(\/|$|\?)/.test(next) && !next.startsWith('//') ? next : '/console/sessions';
}
