// Fixture pages for the MCP tests: one page of widgets each element tool acts on, and
// whose effects the page writes where a test can read them (window.effects and the text of
// #out), a second page for tabs, a slow page for progress, and /api/ping for requests.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const WIDGETS = `<!doctype html><html><head><meta charset="utf-8"><title>Widgets</title></head><body>
<h1>Widgets</h1>
<div id="card" draggable="true" role="button" aria-label="Card" style="width:80px;height:40px;background:#ccf">Card</div>
<div id="bin" role="region" aria-label="Bin" style="width:200px;height:80px;margin-top:20px;background:#fcc">Bin</div>
<label>Colour <select id="colour"><option value="red">Red</option><option value="green">Green</option><option value="blue">Blue</option></select></label>
<button id="hover" onmouseenter="effect('hovered')">Hover me</button>
<label>Attachment <input id="file" type="file" multiple></label>
<button id="ask" onclick="effect('confirm:' + confirm('Proceed?'))">Ask</button>
<button id="name" onclick="effect('prompt:' + prompt('Your name?', 'nobody'))">Name</button>
<p id="out" role="status"></p>
<script>
  window.effects = [];
  function effect(e) { window.effects.push(e); document.getElementById('out').textContent = e; }
  const card = document.getElementById('card'), bin = document.getElementById('bin');
  card.addEventListener('dragstart', (e) => e.dataTransfer.setData('text/plain', 'card'));
  bin.addEventListener('dragover', (e) => e.preventDefault());
  bin.addEventListener('drop', (e) => { e.preventDefault(); effect('dropped:' + e.dataTransfer.getData('text/plain')); });
  document.getElementById('colour').addEventListener('change', (e) => effect('colour:' + e.target.value));
  document.getElementById('file').addEventListener('change', async (e) => {
    const files = await Promise.all([...e.target.files].map(async (f) => f.name + '=' + (await f.text())));
    effect('files:' + files.join(','));
  });
  console.log('widgets ready');
  console.error('widgets warning');
  fetch('/api/ping').then((r) => r.text()).then((t) => effect('ping:' + t));
</script></body></html>`;

export interface McpPages {
  url(path: string): string;
  close(): Promise<void>;
}

export async function startMcpPages(): Promise<McpPages> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const html = (body: string) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(body);
    };
    if (path === '/widgets') return html(WIDGETS);
    if (path === '/second') return html('<!doctype html><title>Second</title><h1>Second page</h1>');
    // Answers after a while: progress has something to report meanwhile.
    if (path === '/slow') {
      setTimeout(() => html('<!doctype html><title>Slow</title><h1>Slow page</h1>'), 2_600);
      return;
    }
    if (path === '/api/ping') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('pong');
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
