// The console's one style sheet and one script, served from /console/assets: nothing comes
// from a CDN, so the console works offline, and the pages' CSP allows only 'self'.
export const CSS = `
:root { color-scheme: light dark; --fg: #1d2126; --muted: #66707a; --bg: #f6f7f9; --card: #fff; --line: #dde1e6; --accent: #2557d6; --bad: #b42318; --ok: #177245; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8eb; --muted: #9aa3ad; --bg: #15171a; --card: #1e2125; --line: #30353b; --accent: #7aa2ff; --bad: #ff8a80; --ok: #6fd39b; } }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header.top { display: flex; align-items: center; gap: 18px; padding: 10px 20px; background: var(--card); border-bottom: 1px solid var(--line); }
header.top strong { margin-right: 8px; }
header.top nav { display: flex; gap: 14px; flex: 1; flex-wrap: wrap; }
header.top a { color: var(--fg); text-decoration: none; }
header.top a.here { color: var(--accent); font-weight: 600; }
main { padding: 20px; max-width: 1280px; margin: 0 auto; }
h1 { font-size: 20px; margin: 0 0 14px; }
h2 { font-size: 16px; margin: 22px 0 8px; }
section.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; margin-bottom: 16px; overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 500; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: var(--accent); }
code, .mono { font-family: ui-monospace, monospace; font-size: 12.5px; }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; background: var(--line); font-size: 12px; }
.badge.running, .badge.succeeded, .badge.completed, .badge.ready { background: #d4f1e0; color: #11532f; }
.badge.failed, .badge.dead, .badge.error { background: #fde2e0; color: #8a1c12; }
.badge.starting, .badge.pending, .badge.processing { background: #fdf0cf; color: #6b4e00; }
.tag { display: inline-block; padding: 0 6px; margin: 0 3px 2px 0; border: 1px solid var(--line); border-radius: 4px; font-size: 12px; }
form.inline { display: inline; }
form.filters { display: flex; gap: 10px; align-items: end; flex-wrap: wrap; margin-bottom: 12px; }
label { display: flex; flex-direction: column; gap: 2px; color: var(--muted); font-size: 12px; }
input, select, button { font: inherit; padding: 5px 9px; border: 1px solid var(--line); border-radius: 6px; background: var(--card); color: var(--fg); }
button { cursor: pointer; background: var(--accent); color: #fff; border-color: var(--accent); }
button.quiet { background: var(--card); color: var(--fg); border-color: var(--line); }
button.danger { background: var(--bad); border-color: var(--bad); }
.notice { padding: 10px 14px; border-radius: 6px; margin-bottom: 14px; border: 1px solid var(--line); background: var(--card); }
.notice.error { border-color: var(--bad); color: var(--bad); }
.notice.ok { border-color: var(--ok); }
.secret { font-family: ui-monospace, monospace; font-size: 14px; padding: 8px; background: var(--bg); border: 1px dashed var(--line); user-select: all; word-break: break-all; }
iframe.live { width: 100%; aspect-ratio: 16 / 10; border: 1px solid var(--line); border-radius: 6px; background: #000; }
video { max-width: 100%; border-radius: 6px; background: #000; }
progress { width: 160px; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 16px; }
svg.chart rect.bar { fill: var(--accent); }
svg.chart text { fill: var(--muted); font-size: 10px; }
svg.chart line { stroke: var(--line); }
.signin { max-width: 420px; margin: 12vh auto; }
.signin form { display: flex; flex-direction: column; gap: 12px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
`;

// Live parts of a page: an element with an id and data-refresh="ms" is fetched again (the
// same address, marked as a refresh so the server does not mint live-view tickets) and
// replaced whole by its new version, attributes included, so a part that stops changing
// (a recording became ready) can stop refreshing. Forms with data-confirm ask first.
export const JS = `
(() => {
  'use strict';
  const parts = () => Array.from(document.querySelectorAll('[data-refresh][id]'));
  let busy = false;
  async function refresh() {
    if (busy || document.hidden || parts().length === 0) return;
    busy = true;
    try {
      const res = await fetch(location.href, { credentials: 'same-origin', headers: { 'x-console-refresh': '1' } });
      if (res.redirected || !res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      for (const el of parts()) {
        const next = doc.getElementById(el.id);
        if (next && next.outerHTML !== el.outerHTML) el.replaceWith(document.importNode(next, true));
      }
      window.__consoleRefreshes = (window.__consoleRefreshes || 0) + 1;
    } catch (e) {
      // offline for a moment: the next tick tries again
    } finally {
      busy = false;
    }
  }
  const every = Math.min(...parts().map((el) => Number(el.dataset.refresh) || 3000), 3000);
  setInterval(refresh, every);
  document.addEventListener('submit', (e) => {
    const msg = e.target.dataset && e.target.dataset.confirm;
    if (msg && !confirm(msg)) e.preventDefault();
  });
})();
`;
