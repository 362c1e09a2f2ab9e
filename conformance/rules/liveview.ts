// S3 (docs/conformance-rules.md): the live_view_url serves a page that shows the session's
// screen. The page is fetched like a browser would; it names the WebSocket it streams
// from in <meta name="live-view-websocket" content="…"> (relative to the page), and that
// socket must deliver a frame of the screen (a binary message holding a JPEG or PNG).
import { WebSocket } from 'ws';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, send } from '../http.js';
import { buildRequest } from '../requests.js';
import { check, defineRules, type T } from '../runner.js';

/** A cheap session, ended by the server if the check cannot end it. */
const HEADLESS = { browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 2, max_duration: 5 }, recording: { active: false } } };
const FRAME_TIMEOUT_MS = 20_000;

const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);
const redact = (url: string) => url.replace(/(token|ticket)=[^&]+/g, '$1=…');

/** The first binary message of a socket, or why there is none. */
function firstFrame(url: string, timeoutMs: number): Promise<{ frame?: Buffer; problem?: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs });
    const done = (r: { frame?: Buffer; problem?: string }) => {
      clearTimeout(timer);
      ws.removeAllListeners();
      ws.on('error', () => {});
      ws.terminate();
      resolve(r);
    };
    const timer = setTimeout(() => done({ problem: `no frame within ${timeoutMs} ms` }), timeoutMs);
    ws.on('message', (data, binary) => {
      if (binary) done({ frame: Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer) });
    });
    ws.once('unexpected-response', (_req, res) => done({ problem: `the upgrade answered HTTP ${res.statusCode}` }));
    ws.once('close', (code, reason) => done({ problem: `the socket closed (${code} ${reason.toString()})` }));
    ws.once('error', (err) => done({ problem: err.message }));
  });
}

/** Where an image starts inside a message (a frame may carry a header first), or -1. */
function imageAt(buf: Buffer): number {
  const jpeg = buf.indexOf(Buffer.from([0xff, 0xd8, 0xff]));
  const png = buf.indexOf(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
  return [jpeg, png].filter((i) => i >= 0).sort((a, b) => a - b)[0] ?? -1;
}

export default defineRules((ctx: SuiteContext) => {
  const createOp = ctx.contract.operation('createSession');
  const endOp = ctx.contract.operation('endSession');

  return [
    check("S3 the live_view_url serves a page that shows the session's screen (its WebSocket sends frames)", async (t: T) => {
      const ex = await ctx.call(await ctx.build(createOp), { bodyValue: HEADLESS });
      t.assert(ex.response?.status === 200, `POST /v1/sessions answered ${show(ex)}`);
      const data = (ex.response.json as { data?: { id?: unknown; live_view_url?: unknown } } | undefined)?.data;
      t.assert(
        typeof data?.id === 'string' && typeof data.live_view_url === 'string',
        `POST /v1/sessions answered no data.id and data.live_view_url: ${show(ex)}`,
      );
      const id = data.id;
      const pageUrl = data.live_view_url;
      try {
        const page = await send({ method: 'GET', url: pageUrl, headers: { accept: 'text/html' }, timeoutMs: ctx.timeoutMs });
        t.assert(page.status === 200, `GET ${redact(pageUrl)} answered ${page.status}`);
        t.assert(page.contentType === 'text/html', `GET ${redact(pageUrl)} answered Content-Type ${page.contentType || '(none)'}, not text/html`);
        const meta = /<meta\s+name=["']live-view-websocket["']\s+content=["']([^"']+)["']/i.exec(page.text);
        t.assert(meta, 'the live-view page names no WebSocket (<meta name="live-view-websocket" content="…">)');
        const wsUrl = new URL(meta[1]!.replace(/&#38;|&amp;/g, '&'), pageUrl);
        wsUrl.protocol = wsUrl.protocol === 'https:' ? 'wss:' : 'ws:';
        const { frame, problem } = await firstFrame(wsUrl.href, FRAME_TIMEOUT_MS);
        t.assert(frame, `the live-view WebSocket ${redact(wsUrl.href)} sent no frame: ${problem}`);
        t.assert(imageAt(frame) >= 0, `the first binary message (${frame.length} bytes) holds no JPEG or PNG image`);
        t.note(`a ${frame.length}-byte frame from ${redact(wsUrl.href)}`);
      } finally {
        await ctx.call(buildRequest(ctx.contract, endOp, { pathParams: { session_id: id } }));
      }
    }),
  ];
});
