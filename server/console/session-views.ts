// The sessions list and one session's page.
import type { components } from '../../generated/types.js';
import type { SessionRow } from '../sessions/index.js';
import type { SessionEvent } from './store.js';
import { badge, bytes, credits, duration, empty, html, tags, when, csrfField, type Markup } from './layout.js';

type S = components['schemas'];
/** Sessions are read from their rows: the API forgets a session a DELETE ended, the console's history does not. */
export type Session = SessionRow;
const seconds = (s: Session) => Math.floor(((s.ended_at ?? new Date()).getTime() - s.created_at.getTime()) / 1000);
export type SessionPage = S['SessionPage'];
export type Recording = S['Recording'];
export type Download = S['Download'];

export const STATUSES = ['starting', 'running', 'completed', 'failed'] as const;

export function sessionsView(o: { list: Session[]; total: number; status: string; tag: string; page: number; pages: number }): Markup {
  const q = (page: number) => `?${new URLSearchParams({ ...(o.status ? { status: o.status } : {}), ...(o.tag ? { tag: o.tag } : {}), page: String(page) })}`;
  return html`<h1>Sessions</h1>
    <form class="filters" method="get" action="/console/sessions">
      <label
        >Status<select name="status">
          <option value="">any</option>
          ${STATUSES.map((s) => html`<option value="${s}" ${o.status === s ? 'selected' : ''}>${s}</option>`)}
        </select></label
      >
      <label>Tag<input name="tag" value="${o.tag}" placeholder="tag" /></label>
      <button type="submit">Filter</button>
    </form>
    <section class="card" id="sessions" data-refresh="3000">
      <p class="muted">${o.total} session(s)${o.pages > 1 ? html` · page ${o.page} of ${o.pages}` : ''}</p>
      ${o.list.length === 0
        ? empty('No sessions match.')
        : html`<table>
            <thead>
              <tr>
                <th>Session</th>
                <th>Status</th>
                <th>Tags</th>
                <th>Created</th>
                <th class="num">Duration</th>
                <th class="num">Credits</th>
              </tr>
            </thead>
            <tbody>
              ${o.list.map(
                (s) =>
                  html`<tr data-session="${s.id}" data-status="${s.status}">
                    <td><a class="mono" href="/console/sessions/${s.id}">${s.id}</a></td>
                    <td>${badge(s.status)}${s.end_reason ? html` <span class="muted">${s.end_reason}</span>` : ''}</td>
                    <td>${tags(s.tags)}</td>
                    <td>${when(s.created_at.toISOString())}</td>
                    <td class="num">${duration(seconds(s))}</td>
                    <td class="num">${credits(s.credits_used)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
      <p>${o.page > 1 ? html`<a href="${q(o.page - 1)}">← newer</a> ` : ''}${o.page < o.pages ? html`<a href="${q(o.page + 1)}">older →</a>` : ''}</p>
    </section>`;
}

export function sessionView(o: {
  s: Session;
  csrf: string;
  /** The live-view page to embed, when the session runs here (undefined on a refresh). */
  liveSrc?: string;
  control: boolean;
  refresh: boolean;
  pages: SessionPage[] | undefined;
  recordings: Recording[];
  downloads: Download[];
  events: SessionEvent[];
}): Markup {
  const { s } = o;
  const live = s.status === 'running' || s.status === 'starting';
  const ready = o.recordings.find((r) => r.is_primary) ?? o.recordings[0];
  return html`<h1>Session <span class="mono">${s.id}</span></h1>
    <div class="grid2">
      <section class="card" id="facts" data-refresh="3000">
        <dl class="facts">
          <dt>Status</dt>
          <dd>${badge(s.status)}${s.end_reason ? html` <span class="muted">${s.end_reason}</span>` : ''}</dd>
          <dt>Tags</dt>
          <dd>${s.tags.length ? tags(s.tags) : html`<span class="muted">none</span>`}</dd>
          <dt>Created</dt>
          <dd>${when(s.created_at.toISOString())}</dd>
          <dt>Ended</dt>
          <dd>${when(s.ended_at?.toISOString())}</dd>
          <dt>Duration</dt>
          <dd>${duration(seconds(s))}</dd>
          <dt>Credits</dt>
          <dd>${credits(s.credits_used)}</dd>
          <dt>Network</dt>
          <dd>${bytes(s.network_bytes_total)} (proxy ${bytes(s.proxy_bytes)})</dd>
          <dt>Screenshots</dt>
          <dd>${s.screenshots}</dd>
        </dl>
        ${live
          ? html`<p><form class="inline" method="post" action="/console/sessions/${s.id}/end" data-confirm="End this session?">${csrfField(o.csrf)}<button class="danger" type="submit">End session</button></form></p>`
          : ''}
      </section>
      <section class="card" id="pages" ${live ? html`data-refresh="3000"` : ''}>
        <h2>Pages</h2>
        ${o.pages === undefined
          ? empty(live ? 'Pages are read while the browser runs.' : 'The browser has ended.')
          : o.pages.length === 0
            ? empty('No pages open.')
            : html`<table>
                <tbody>
                  ${o.pages.map(
                    (p) =>
                      html`<tr>
                        <td>${p.active ? html`<span class="badge running">active</span>` : ''}</td>
                        <td>${p.title || html`<span class="muted">untitled</span>`}</td>
                        <td class="mono">${p.url}</td>
                      </tr>`,
                  )}
                </tbody>
              </table>`}
      </section>
    </div>
    ${live && !o.refresh
      ? html`<section class="card">
          <h2>Live view ${o.control ? html`<span class="badge running">taking over</span>` : html`<span class="badge">watching</span>`}</h2>
          ${o.liveSrc
            ? html`<iframe class="live" id="live-view" src="${o.liveSrc}" title="Live view of the session"></iframe>
                <p>
                  ${o.control
                    ? html`Your mouse and keyboard drive the browser. <a href="/console/sessions/${s.id}">Stop taking over</a>`
                    : html`<a href="/console/sessions/${s.id}?control=1" id="take-over">Take over</a>
                        <span class="muted">(drive the browser with your mouse and keyboard)</span>`}
                </p>`
            : empty('This session is not running on this server.')}
        </section>`
      : ''}
    <section class="card" id="recording" ${ready ? '' : html`data-refresh="5000"`}>
      <h2>Recording</h2>
      ${ready
        ? html`<video id="recording-video" controls preload="auto" src="${ready.file_link}"></video>
            <p class="muted">
              ${ready.suggested_file_name} · ${duration(ready.duration)} · ${bytes(ready.size)} ·
              <a href="${ready.file_link}" download="${ready.suggested_file_name}">download</a>
            </p>`
        : empty(
            live ? 'The recording is ready once the session ends (if recording is on).' : 'No recording (recording was off, or it is still being encoded).',
          )}
    </section>
    <div class="grid2">
      <section class="card" id="events" data-refresh="3000">
        <h2>Events</h2>
        ${o.events.length === 0
          ? empty('No events yet.')
          : html`<table>
              <tbody>
                ${o.events.map(
                  (e) =>
                    html`<tr data-event="${e.type}">
                      <td>${when(e.created.toISOString())}</td>
                      <td><code>${e.type}</code></td>
                      <td>${e.text}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`}
      </section>
      <section class="card" id="downloads" data-refresh="5000">
        <h2>Downloads</h2>
        ${o.downloads.length === 0
          ? empty('No downloads.')
          : html`<table>
              <tbody>
                ${o.downloads.map(
                  (d) =>
                    html`<tr>
                      <td><a href="/console/sessions/${s.id}/downloads/${d.id}">${d.suggested_file_name}</a></td>
                      <td class="num">${bytes(d.size)}</td>
                      <td class="mono muted">${d.original_download_url}</td>
                      <td>${when(d.created_at)}</td>
                    </tr>`,
                )}
              </tbody>
            </table>`}
      </section>
    </div>`;
}
