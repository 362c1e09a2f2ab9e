// The live-view page: plain HTML, CSS and JavaScript in one document, no external assets,
// so it works offline and behind any proxy. It opens the WebSocket named in its
// <meta name="live-view-websocket">, draws the JPEG frames it receives on a canvas, lists
// the session's tabs, and sends pointer, wheel, keyboard, paste and tab-switch input.
// Read-only is the server's business: the page sends input either way and the server drops
// it for read-only sessions.
//
// Wire protocol (server.ts of this folder is the other end):
//   server → page, binary: [u32 big-endian n][n bytes of JSON FrameHeader][JPEG]
//   server → page, text:   {type: 'hello' | 'tabs' | 'ended' | 'pong', ...}
//   page → server, text:   {t: 'mouse' | 'wheel' | 'key' | 'paste' | 'tab' | 'ping', ...}
// Close codes: 4401 bad link, 4404 session gone, 4410 session ended, 4429 too many viewers.
//
// A person's help asked for by code in the session (interventions/) shows as a panel over
// the screen: the page polls <config.interventions> (GET, the viewer's ticket) and sends
// the answer there (POST {request_id, response}): Yes/No for `confirm`, a field for `text`
// and `otp`, "Done" after taking over for `takeover`. A view-only viewer sees the request
// but cannot answer it.

export interface PageConfig {
  sessionId: string;
  /** Path and query of the WebSocket, relative to the page. */
  ws: string;
  /** Path and query of the session's pending interventions, for this viewer. */
  interventions: string;
  readOnly: boolean;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** JSON that is safe inside a <script> element. */
const scriptJson = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

export function livePage(config: PageConfig, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="live-view-websocket" content="${escapeHtml(config.ws)}">
<title>Live view</title>
<style nonce="${nonce}">
  :root { color-scheme: dark; }
  * { box-sizing: border-box; }
  html, body { margin: 0; height: 100%; background: #15171a; color: #e6e6e6; font: 13px/1.3 system-ui, sans-serif; overflow: hidden; }
  header { display: flex; align-items: center; gap: 8px; height: 38px; padding: 0 8px; background: #202327; border-bottom: 1px solid #2e3237; }
  #tabs { display: flex; gap: 4px; flex: 1; min-width: 0; overflow-x: auto; scrollbar-width: none; }
  #tabs button { flex: 0 1 200px; min-width: 60px; max-width: 220px; height: 28px; padding: 0 10px; border: 1px solid #353a40; border-radius: 6px; background: #272b30; color: #c9ccd0; font: inherit; text-align: left; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; cursor: pointer; }
  #tabs button.active { background: #3a4049; color: #fff; border-color: #58606b; }
  #status { padding: 3px 8px; border-radius: 10px; background: #3a3f45; white-space: nowrap; }
  #status.live { background: #1f6f43; }
  #status.viewonly { background: #2d5b8a; }
  #status.ended, #status.error { background: #7a2b2b; }
  #stats { color: #8b9097; font-variant-numeric: tabular-nums; white-space: nowrap; }
  main { position: absolute; top: 38px; left: 0; right: 0; bottom: 0; display: flex; align-items: center; justify-content: center; }
  canvas { display: block; background: #000; cursor: default; outline: none; image-rendering: auto; }
  #keys { position: absolute; left: -1000px; top: 0; width: 10px; height: 10px; opacity: 0; }
  #ask { position: absolute; top: 46px; left: 50%; transform: translateX(-50%); z-index: 2; width: min(32em, 92vw); padding: 12px 14px; border: 1px solid #c9a227; border-radius: 8px; background: #2b2616; box-shadow: 0 4px 18px #0008; }
  #ask[hidden] { display: none; }
  #ask p { margin: 0 0 10px; white-space: pre-wrap; }
  #ask form { display: flex; gap: 8px; }
  #ask input { flex: 1; min-width: 0; padding: 5px 8px; border: 1px solid #555; border-radius: 5px; background: #15171a; color: inherit; font: inherit; }
  #ask button { padding: 5px 14px; border: 1px solid #58606b; border-radius: 5px; background: #3a4049; color: #fff; font: inherit; cursor: pointer; }
  #ask .note { margin: 8px 0 0; color: #b9b190; font-size: 12px; }
</style>
</head>
<body>
<header>
  <nav id="tabs" aria-label="Tabs"></nav>
  <span id="stats"></span>
  <span id="status">Connecting…</span>
</header>
<section id="ask" role="alertdialog" aria-live="assertive" hidden></section>
<main id="stage">
  <canvas id="screen" width="1" height="1" aria-label="The session's screen"></canvas>
  <textarea id="keys" autocomplete="off" autocapitalize="off" spellcheck="false" aria-label="Keyboard input"></textarea>
</main>
<script type="application/json" id="config">${scriptJson(config)}</script>
<script nonce="${nonce}">
(() => {
  'use strict';
  const cfg = JSON.parse(document.getElementById('config').textContent);
  const canvas = document.getElementById('screen');
  const ctx = canvas.getContext('2d');
  const keys = document.getElementById('keys');
  const stage = document.getElementById('stage');
  const statusEl = document.getElementById('status');
  const statsEl = document.getElementById('stats');
  const tabsEl = document.getElementById('tabs');
  // For people and for tests: what the page has seen.
  const state = (window.__liveView = { status: 'connecting', frames: 0, last: null, readOnly: cfg.readOnly, tabs: [], fps: 0, latencyMs: null, connects: 0 });

  let ws = null;
  let retry = 0;
  let over = false;
  let page = { w: 0, h: 0 };
  const send = (msg) => { if (ws && ws.readyState === 1) ws.send(JSON.stringify(msg)); };

  function setStatus(text, cls) {
    statusEl.textContent = text;
    statusEl.className = cls || '';
    state.status = cls || text;
  }

  function connect() {
    const url = new URL(cfg.ws, location.href);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => { retry = 0; state.connects++; };
    ws.onmessage = (ev) => (typeof ev.data === 'string' ? onText(JSON.parse(ev.data)) : onFrame(ev.data));
    ws.onclose = (ev) => {
      ws = null;
      if (over) return;
      if (ev.code === 4410 || ev.code === 4404) { over = true; return setStatus('Session ended', 'ended'); }
      if (ev.code === 4401) { over = true; return setStatus('This live-view link is not valid (or was already used)', 'error'); }
      if (ev.code === 4429) setStatus('Too many viewers, retrying…', 'error');
      else setStatus('Reconnecting…', 'connecting');
      setTimeout(connect, Math.min(5000, 250 * 2 ** retry++));
    };
  }

  function onText(msg) {
    if (msg.type === 'hello') {
      state.readOnly = msg.readOnly;
      setStatus(msg.readOnly ? 'View only' : 'Live', msg.readOnly ? 'viewonly' : 'live');
      if (msg.tabs) showTabs(msg.tabs);
    } else if (msg.type === 'tabs') {
      showTabs(msg.tabs);
    } else if (msg.type === 'ended') {
      over = true;
      setStatus('Session ended', 'ended');
    }
  }

  function showTabs(tabs) {
    state.tabs = tabs;
    tabsEl.replaceChildren(...tabs.map((t) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = t.title || t.url || 'New tab';
      b.title = t.url;
      b.dataset.id = t.id;
      if (t.active) b.className = 'active';
      b.addEventListener('click', () => { send({ t: 'tab', id: t.id }); keys.focus(); });
      return b;
    }));
  }

  // Frames: decode one at a time and keep only the newest waiting one.
  let decoding = false;
  let waiting = null;
  const arrivals = [];
  function onFrame(buf) {
    const n = new DataView(buf).getUint32(0);
    const meta = JSON.parse(new TextDecoder().decode(new Uint8Array(buf, 4, n)));
    meta.arrived = Date.now();
    const blob = new Blob([new Uint8Array(buf, 4 + n)], { type: 'image/jpeg' });
    if (decoding) { waiting = { meta, blob }; return; }
    draw(meta, blob);
  }
  async function draw(meta, blob) {
    decoding = true;
    try {
      const bmp = await createImageBitmap(blob);
      if (canvas.width !== bmp.width || canvas.height !== bmp.height) {
        canvas.width = bmp.width;
        canvas.height = bmp.height;
        fit();
      }
      ctx.drawImage(bmp, 0, 0);
      bmp.close();
      page = { w: meta.w, h: meta.h };
      state.frames++;
      state.last = meta;
      // A frame sent long after it was made is the still screen replayed: no latency to show.
      if (meta.sent - meta.ts < 1000) state.latencyMs = Date.now() - meta.ts;
      arrivals.push(Date.now());
    } catch (e) {
      // a broken frame: wait for the next
    } finally {
      decoding = false;
      if (waiting) { const w = waiting; waiting = null; draw(w.meta, w.blob); }
    }
  }
  setInterval(() => {
    const now = Date.now();
    while (arrivals.length && arrivals[0] < now - 1000) arrivals.shift();
    state.fps = arrivals.length;
    statsEl.textContent = state.frames ? state.fps + ' fps' + (state.latencyMs !== null ? ' · ' + state.latencyMs + ' ms' : '') : '';
  }, 500);

  // The canvas keeps the frame's aspect ratio and fills the stage.
  function fit() {
    const s = Math.min(stage.clientWidth / canvas.width, stage.clientHeight / canvas.height);
    canvas.style.width = Math.floor(canvas.width * s) + 'px';
    canvas.style.height = Math.floor(canvas.height * s) + 'px';
  }
  addEventListener('resize', fit);

  // Input. Coordinates go out in the page's CSS pixels.
  const mods = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  const buttonName = (b) => ['left', 'middle', 'right'][b] || 'none';
  function at(e) {
    const r = canvas.getBoundingClientRect();
    const w = page.w || canvas.width;
    const h = page.h || canvas.height;
    return { x: Math.round(((e.clientX - r.left) / r.width) * w), y: Math.round(((e.clientY - r.top) / r.height) * h) };
  }
  canvas.addEventListener('mousedown', (e) => {
    e.preventDefault();
    keys.focus({ preventScroll: true });
    send({ t: 'mouse', e: 'down', ...at(e), b: buttonName(e.button), bs: e.buttons, c: e.detail || 1, m: mods(e) });
  });
  canvas.addEventListener('mouseup', (e) => {
    e.preventDefault();
    send({ t: 'mouse', e: 'up', ...at(e), b: buttonName(e.button), bs: e.buttons, c: e.detail || 1, m: mods(e) });
  });
  let move = null;
  canvas.addEventListener('mousemove', (e) => {
    const first = !move;
    move = { t: 'mouse', e: 'move', ...at(e), b: e.buttons & 1 ? 'left' : e.buttons & 4 ? 'middle' : e.buttons & 2 ? 'right' : 'none', bs: e.buttons, c: 0, m: mods(e) };
    if (first) requestAnimationFrame(() => { send(move); move = null; });
  });
  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const k = e.deltaMode === 1 ? 40 : e.deltaMode === 2 ? 800 : 1;
    send({ t: 'wheel', ...at(e), dx: e.deltaX * k, dy: e.deltaY * k, m: mods(e) });
  }, { passive: false });
  canvas.addEventListener('contextmenu', (e) => e.preventDefault());

  const isPaste = (e) => (e.ctrlKey || e.metaKey) && !e.altKey && (e.key === 'v' || e.key === 'V');
  function key(e, kind) {
    // Ctrl+V / Cmd+V: the browser fires 'paste' with the local clipboard, sent as text.
    if (isPaste(e)) return;
    e.preventDefault();
    send({ t: 'key', e: kind, key: e.key, code: e.code, kc: e.keyCode, loc: e.location, rep: e.repeat, m: mods(e) });
  }
  keys.addEventListener('keydown', (e) => key(e, 'down'));
  keys.addEventListener('keyup', (e) => key(e, 'up'));
  keys.addEventListener('paste', (e) => {
    e.preventDefault();
    const text = e.clipboardData ? e.clipboardData.getData('text/plain') : '';
    if (text) send({ t: 'paste', text });
  });
  keys.addEventListener('input', () => { keys.value = ''; });

  // Interventions: the oldest pending request, with the control its input type needs.
  const askEl = document.getElementById('ask');
  state.interventions = [];
  let shown = null;
  function renderAsk(list) {
    state.interventions = list;
    const r = list[0];
    if (!r) { shown = null; askEl.hidden = true; askEl.replaceChildren(); return; }
    if (shown === r.request_id) return;
    shown = r.request_id;
    const msg = document.createElement('p');
    msg.textContent = r.message;
    const form = document.createElement('form');
    form.dataset.requestId = r.request_id;
    const button = (label, value) => {
      const b = document.createElement('button');
      b.type = 'submit';
      b.textContent = label;
      b.value = value;
      return b;
    };
    if (r.input_type === 'confirm') form.append(button('Yes', 'yes'), button('No', 'no'));
    else if (r.input_type === 'takeover') form.append(button('Done', 'done'));
    else {
      const field = document.createElement('input');
      field.name = 'response';
      field.required = true;
      field.autocomplete = r.input_type === 'otp' ? 'one-time-code' : 'off';
      if (r.input_type === 'otp') field.inputMode = 'numeric';
      form.append(field, button('Send', ''));
    }
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const field = form.querySelector('input');
      const response = field ? field.value : (e.submitter && e.submitter.value) || '';
      for (const el of form.elements) el.disabled = true;
      const res = await fetch(cfg.interventions, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ request_id: r.request_id, response }) }).catch(() => null);
      if (res && res.ok) { shown = null; poll(); return; }
      for (const el of form.elements) el.disabled = false;
      const err = document.createElement('p');
      err.className = 'note';
      err.textContent = res ? 'Not sent: ' + ((await res.json().catch(() => ({}))).error?.message || res.status) : 'Not sent: no connection.';
      form.after(err);
    });
    const parts = [msg, form];
    if (r.input_type === 'takeover') {
      const note = document.createElement('p');
      note.className = 'note';
      note.textContent = 'Act in the page below, then press Done.';
      parts.push(note);
    }
    if (state.readOnly) {
      for (const el of form.elements) el.disabled = true;
      const note = document.createElement('p');
      note.className = 'note';
      note.textContent = 'This view is read-only: open the takeover link of the request to answer it.';
      parts.push(note);
    }
    askEl.replaceChildren(...parts);
    askEl.hidden = false;
  }
  async function poll() {
    if (over) return renderAsk([]);
    const res = await fetch(cfg.interventions, { cache: 'no-store' }).catch(() => null);
    if (res && res.ok) renderAsk((await res.json()).requests || []);
  }
  setInterval(poll, 2000);
  poll();

  setInterval(() => send({ t: 'ping', id: Date.now() }), 15000);
  fit();
  connect();
  keys.focus({ preventScroll: true });
})();
</script>
</body>
</html>
`;
}

/** A small page for links that do not (or no longer) open a live view. */
export function messagePage(title: string, message: string, nonce: string): string {
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">html,body{margin:0;height:100%;background:#15171a;color:#e6e6e6;font:15px/1.4 system-ui,sans-serif}main{max-width:36em;margin:15vh auto;padding:0 1em}h1{font-size:20px}</style></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></main></body>
</html>
`;
}
