// The project's pages: batches, webhooks and their deliveries, usage, API keys, profiles,
// extensions, and tasks with their runs.
import type { components } from '../../generated/types.js';
import type { KeyRow } from '../admin/index.js';
import { barChart } from './chart.js';
import { badge, bytes, credits, csrfField, empty, html, notice, when, type Markup } from './layout.js';

type S = components['schemas'];

export function batchesView(list: S['BatchSummary'][]): Markup {
  return html`<h1>Batches</h1>
    <section class="card" id="batches" data-refresh="3000">
      ${list.length === 0
        ? empty('No batches.')
        : html`<table>
            <thead>
              <tr>
                <th>Batch</th>
                <th>Status</th>
                <th>Progress</th>
                <th class="num">Done</th>
                <th class="num">Failed</th>
                <th class="num">Waiting</th>
                <th class="num">Total</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              ${list.map(
                (b) =>
                  html`<tr data-batch="${b.batch_id}">
                    <td><a class="mono" href="/console/sessions?batch_id=${b.batch_id}">${b.batch_id}</a></td>
                    <td>${badge(b.status)}</td>
                    <td><progress max="100" value="${b.progress}"></progress> ${Math.round(b.progress)} %</td>
                    <td class="num">${b.completed_requests}</td>
                    <td class="num">${b.failed_requests}</td>
                    <td class="num">${b.pending_requests}</td>
                    <td class="num">${b.total_requests}</td>
                    <td>${when(b.created_at)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}

export function webhooksView(list: S['Webhook'][]): Markup {
  return html`<h1>Webhooks</h1>
    <section class="card">
      ${list.length === 0
        ? empty('No webhooks. Register one with POST /v1/webhooks.')
        : html`<table>
            <thead>
              <tr>
                <th>Webhook</th>
                <th>URL</th>
                <th>Events</th>
                <th>Enabled</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              ${list.map(
                (w) =>
                  html`<tr>
                    <td><a class="mono" href="/console/webhooks/${w.id}">${w.id}</a></td>
                    <td class="mono">${w.url}</td>
                    <td>${w.subscribed_events.map((e) => html`<code>${e}</code> `)}</td>
                    <td>${w.enabled ? 'yes' : 'no'}</td>
                    <td>${when(w.created_at)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}

export function webhookView(o: {
  w: S['Webhook'];
  deliveries: S['WebhookDelivery'][];
  eventTypes: readonly string[];
  csrf: string;
  message?: { kind: 'ok' | 'error'; text: string };
}): Markup {
  const { w } = o;
  return html`<h1>Webhook <span class="mono">${w.id}</span></h1>
    ${o.message ? notice(o.message.kind, o.message.text) : ''}
    <section class="card">
      <dl class="facts">
        <dt>URL</dt>
        <dd class="mono">${w.url}</dd>
        <dt>Description</dt>
        <dd>${w.description || html`<span class="muted">none</span>`}</dd>
        <dt>Events</dt>
        <dd>${w.subscribed_events.map((e) => html`<code>${e}</code> `)}</dd>
        <dt>Enabled</dt>
        <dd>${w.enabled ? 'yes' : 'no'}</dd>
      </dl>
      <form class="filters" method="post" action="/console/webhooks/${w.id}/test">
        ${csrfField(o.csrf)}
        <label
          >Event type<select name="event_type">
            ${o.eventTypes.map((t) => html`<option value="${t}">${t}</option>`)}
          </select></label
        >
        <button type="submit" id="send-test">Send test</button>
      </form>
    </section>
    <section class="card" id="deliveries" data-refresh="3000">
      <h2>Deliveries</h2>
      ${o.deliveries.length === 0
        ? empty('No deliveries yet.')
        : html`<table>
            <thead>
              <tr>
                <th>Delivery</th>
                <th>Event</th>
                <th class="num">Attempt</th>
                <th>Status</th>
                <th>Answer</th>
                <th>Scheduled</th>
                <th>Done</th>
                <th></th>
              </tr>
            </thead>
            <tbody>
              ${o.deliveries.map(
                (d) =>
                  html`<tr data-delivery="${d.id}" data-status="${d.status}">
                    <td class="mono">${d.id}</td>
                    <td><code>${d.event_type}</code> <span class="mono muted">${d.event_id}</span></td>
                    <td class="num">${d.attempt}</td>
                    <td>${badge(d.status)}</td>
                    <td>${d.response_status ?? ''} ${d.error_message ? html`<span class="muted">${d.error_message}</span>` : ''}</td>
                    <td>${when(d.scheduled_at)}</td>
                    <td>${when(d.completed_at)}</td>
                    <td>
                      ${d.status === 'pending'
                        ? ''
                        : html`<form class="inline" method="post" action="/console/webhooks/${w.id}/deliveries/${d.id}/retry">
                            ${csrfField(o.csrf)}<button class="quiet" type="submit">Retry</button>
                          </form>`}
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}

export function usageView(b: S['BillingResponse']['data']): Markup {
  const buckets = b.usage?.buckets ?? [];
  const total = buckets.reduce((n, x) => n + x.credits_used, 0);
  return html`<h1>Usage</h1>
    <section class="card">
      <dl class="facts">
        <dt>Credits left</dt>
        <dd id="credits-left">${credits(b.credits)}</dd>
        <dt>Used this period</dt>
        <dd>${credits(b.credits_used)}</dd>
        <dt>Included per period</dt>
        <dd>${credits(b.included_credits)}</dd>
        <dt>Period</dt>
        <dd>${when(b.billing_period.start)} → ${when(b.billing_period.end)}</dd>
        <dt>Tier</dt>
        <dd>${b.tier}</dd>
        <dt>Cost limit</dt>
        <dd>${b.cost_limit === null ? html`<span class="muted">none</span>` : credits(b.cost_limit)}</dd>
        <dt>Browsers at once</dt>
        <dd>${b.max_concurrent_browsers}</dd>
      </dl>
    </section>
    <section class="card" id="usage-chart">
      <h2>Credits per day, last ${buckets.length} days (sessions, by creation day, UTC): ${credits(total)}</h2>
      ${barChart(
        buckets.map((x) => ({ start: x.start, value: x.credits_used })),
        'Credits used per day',
      )}
    </section>`;
}

export function keysView(o: { keys: KeyRow[]; current: string; csrf: string; created?: { key: string; name: string | null }; message?: string }): Markup {
  return html`<h1>API keys</h1>
    ${o.message ? notice('ok', o.message) : ''}
    ${o.created
      ? html`<section class="card">
          <p><strong>New key${o.created.name ? ` “${o.created.name}”` : ''}.</strong> Copy it now: it is shown this once and cannot be read again.</p>
          <p class="secret" id="new-key">${o.created.key}</p>
        </section>`
      : ''}
    <section class="card">
      <form class="filters" method="post" action="/console/keys">
        ${csrfField(o.csrf)}
        <label>Name (optional)<input name="name" maxlength="100" placeholder="ci" /></label>
        <button type="submit" id="create-key">Create key</button>
      </form>
      <table>
        <thead>
          <tr>
            <th>Prefix</th>
            <th>Name</th>
            <th>Created</th>
            <th>Last used</th>
            <th>State</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${o.keys.map(
            (k) =>
              html`<tr data-key="${k.id}">
                <td class="mono">${k.prefix}…</td>
                <td>${k.name ?? html`<span class="muted">${k.source}</span>`}${k.id === o.current ? html` <span class="badge">this console</span>` : ''}</td>
                <td>${when(k.created_at.toISOString())}</td>
                <td>${when(k.last_used_at?.toISOString())}</td>
                <td>
                  ${k.revoked_at
                    ? html`<span class="badge failed">revoked</span> ${when(k.revoked_at.toISOString())}`
                    : html`<span class="badge running">active</span>`}
                </td>
                <td>
                  ${k.revoked_at
                    ? ''
                    : html`<form
                        class="inline"
                        method="post"
                        action="/console/keys/${k.id}/revoke"
                        data-confirm="Revoke this key? Programs using it get 401 at once."
                      >
                        ${csrfField(o.csrf)}<button class="danger" type="submit">Revoke</button>
                      </form>`}
                </td>
              </tr>`,
          )}
        </tbody>
      </table>
    </section>`;
}

export function profilesView(list: S['Profile'][]): Markup {
  return html`<h1>Profiles</h1>
    <section class="card" id="profiles" data-refresh="5000">
      ${list.length === 0
        ? empty('No profiles.')
        : html`<table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Status</th>
                <th>Source</th>
                <th>Session</th>
                <th class="num">Size</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              ${list.map(
                (p) =>
                  html`<tr>
                    <td>${p.name}${p.description ? html`<div class="muted">${p.description}</div>` : ''}</td>
                    <td>${badge(String(p.status))}${p.failure_reason ? html` <span class="muted">${p.failure_reason}</span>` : ''}</td>
                    <td>${String(p.source)}</td>
                    <td>${p.session_id ? html`<a class="mono" href="/console/sessions/${p.session_id}">${p.session_id}</a>` : ''}</td>
                    <td class="num">${p.size_bytes === null ? '' : bytes(p.size_bytes)}</td>
                    <td>${when(p.updated_at)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}

export function extensionsView(list: S['Extension'][]): Markup {
  return html`<h1>Extensions</h1>
    <section class="card">
      ${list.length === 0
        ? empty('No extensions.')
        : html`<table>
            <thead>
              <tr>
                <th>Id</th>
                <th>Name</th>
                <th>Version</th>
                <th>Uploaded</th>
              </tr>
            </thead>
            <tbody>
              ${list.map(
                (e) =>
                  html`<tr>
                    <td class="mono">${e.id}</td>
                    <td>${e.name}${e.manifest.description ? html`<div class="muted">${e.manifest.description}</div>` : ''}</td>
                    <td>${e.manifest.version}</td>
                    <td>${when(e.createdAt)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}

export function signInView(o: { token: string; error?: string; next: string }): Markup {
  return html`<div class="signin">
    <h1>Console</h1>
    <section class="card">
      ${o.error ? notice('error', o.error) : ''}
      <form method="post" action="/console/sign-in">
        <input type="hidden" name="_login" value="${o.token}" />
        <input type="hidden" name="next" value="${o.next}" />
        <label>API key<input type="password" name="api_key" autocomplete="current-password" required autofocus placeholder="sk_…" /></label>
        <button type="submit">Sign in</button>
      </form>
      <p class="muted">The key is kept sealed in a cookie of this site; signing out forgets it.</p>
    </section>
  </div>`;
}

export function tasksView(list: S['Task'][]): Markup {
  return html`<h1>Tasks</h1>
    <section class="card" id="tasks">
      ${list.length === 0
        ? empty('No tasks.')
        : html`<table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Latest version</th>
                <th>Language</th>
                <th>Updated</th>
              </tr>
            </thead>
            <tbody>
              ${list.map(
                (t) =>
                  html`<tr>
                    <td><a href="/console/tasks/${t.id}">${t.name}</a>${t.description ? html`<div class="muted">${t.description}</div>` : ''}</td>
                    <td>${t.latestVersion}</td>
                    <td>${t.language}</td>
                    <td>${when(t.updatedAt)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}

/** One task: its runs (executions), newest first, refreshed while some still run. */
export function taskView(task: S['Task'], runs: S['TaskExecutionResult'][]): Markup {
  return html`<h1>${task.name}</h1>
    ${task.description ? html`<p class="muted">${task.description}</p>` : ''}
    <section class="card" id="runs" data-refresh="5000">
      <h2>Runs</h2>
      ${runs.length === 0
        ? empty('No runs yet.')
        : html`<table>
            <thead>
              <tr>
                <th>Execution</th>
                <th>Version</th>
                <th>Status</th>
                <th>Started</th>
                <th class="num">Duration</th>
                <th>Output or error</th>
              </tr>
            </thead>
            <tbody>
              ${runs.map(
                (r) =>
                  html`<tr>
                    <td class="mono">${r.id}</td>
                    <td>${r.version}</td>
                    <td>${badge(r.status)}</td>
                    <td>${when(r.startTime)}</td>
                    <td class="num">${r.executionTime === null ? '' : `${(r.executionTime / 1000).toFixed(1)} s`}</td>
                    <td>${r.errorMessage ? html`<span class="error">${r.errorMessage}</span>` : html`<code>${(r.output ?? '').slice(0, 300)}</code>`}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`}
    </section>`;
}
