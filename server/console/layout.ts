// The console's pages are plain server-rendered HTML built with hono/html's tagged
// templates: Hono is already the server's framework, the templates escape every
// interpolated value by default, and there is no JSX or bundling step to add to the build;
// the little interactivity there is (live parts, confirmations) is one small script (assets.ts).
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

export type Markup = HtmlEscapedString | Promise<HtmlEscapedString>;

const NAV: readonly [string, string][] = [
  ['sessions', 'Sessions'],
  ['batches', 'Batches'],
  ['webhooks', 'Webhooks'],
  ['usage', 'Usage'],
  ['keys', 'API keys'],
  ['profiles', 'Profiles'],
  ['extensions', 'Extensions'],
  ['tasks', 'Tasks'],
];

export function page(o: { title: string; here?: string; csrf?: string; body: Markup }): Markup {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${o.title} · Console</title>
        <link rel="stylesheet" href="/console/assets/console.css" />
        <script src="/console/assets/console.js" defer></script>
      </head>
      <body>
        ${o.csrf !== undefined
          ? html`<header class="top">
              <strong>Cloud browser</strong>
              <nav>${NAV.map(([path, label]) => html`<a href="/console/${path}" class="${o.here === path ? 'here' : ''}">${label}</a>`)}</nav>
              <form class="inline" method="post" action="/console/sign-out">${csrfField(o.csrf)}<button class="quiet" type="submit">Sign out</button></form>
            </header>`
          : ''}
        <main>${o.body}</main>
      </body>
    </html>`;
}

export const csrfField = (token: string) => html`<input type="hidden" name="_csrf" value="${token}" />`;

export const badge = (status: string) => html`<span class="badge ${status}">${status}</span>`;

export const tags = (list: readonly string[]) => html`${list.map((t) => html`<span class="tag">${t}</span>`)}`;

export const when = (iso: string | null | undefined) =>
  iso ? html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>` : html`<span class="muted">–</span>`;

export function duration(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
}

export const credits = (v: number) => (v === 0 ? '0' : v.toFixed(v < 1 ? 4 : 2));

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export const notice = (kind: 'ok' | 'error', text: string | undefined) => (text ? html`<div class="notice ${kind}" role="status">${text}</div>` : '');

export const empty = (what: string) => html`<p class="muted">${what}</p>`;

export { html, raw };
