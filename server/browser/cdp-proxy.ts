// The public CDP endpoint: ws(s)://HOST/v1/cdp/{session_id}?token=T, piped to the
// session's own Chromium. The hosted vendor's SDK builds its own address instead,
// ws(s)://HOST?apiKey=K&sessionId=S, and that is accepted too: the key opens the sessions of
// its project. It is the weaker form (an API key in a URL lands in proxies' and clients'
// logs, and it opens every session of the project, not one), so cdp_url never uses it. Frames are passed through untouched (never parsed): the proxy
// must work with every CDP client and protocol version, and cost as little as possible.
// The one exception is a client's download behavior, pointed at the browser's own downloads
// folder (download-path.ts): only the rare frames that could set one are parsed.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { pinDownloadPath } from './download-path.js';
import { refuseLocalFiles } from './local-files.js';
import type { Log } from './log.js';

export interface CdpTarget {
  /** The browser's own endpoint: ws://127.0.0.1:PORT/devtools/browser/GUID. */
  wsEndpoint: string;
  /**
   * Called for every message, with its direction: any message is activity (idle timeout);
   * what clients send are the session's automation steps.
   */
  onMessage(from: 'client' | 'browser', data: RawData): void;
  /** The browser's downloads folder: every download behavior a client sets is pointed there. */
  downloadsDir?: string;
  /** The session's uploads folder: the only files a client may give a file input (local-files.ts). */
  uploadsDir?: string;
}

/** What opens a session: its own CDP token, or an API key of its project (the SDK's form). */
export type CdpCredential = { token: string } | { apiKey: string };

/**
 * null: the credential does not open that session (answered 401, without saying whether the
 * session exists); 'not_found': no such session or it has ended (404).
 */
export type CdpResolution = CdpTarget | null | 'not_found';

export interface CdpProxyOptions {
  resolve(sessionId: string, credential: CdpCredential): Promise<CdpResolution>;
  log: Log;
  /** Largest message accepted from either side (default 256 MiB, as Playwright). */
  maxPayload?: number;
}

export interface CdpProxy {
  /** Takes the upgrade and returns true if the path is /v1/cdp/{id}[/…]; false otherwise. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Disconnects every client of the session (it ended; its token is revoked). */
  closeSession(sessionId: string): void;
  /** Open client connections, of one session or in all. */
  connectionCount(sessionId?: string): number;
  /** Disconnects everyone and refuses further upgrades (server shutdown). */
  close(): void;
}

interface Bridge {
  client: WebSocket;
  upstream: WebSocket;
}

/**
 * Paths: /v1/cdp/{id}, plus what CDP clients append after reading our
 * /json/version document: /devtools/browser/{guid} (the browser) or
 * /devtools/page/{targetId} (a single page, as some clients connect to).
 */
const PATH = /^\/v1\/cdp\/([^/]+)(\/devtools\/(browser|page)\/([^/]+))?\/?$/;

export interface CdpPath {
  /** Empty: ours, but no CDP endpoint (answered 404). */
  sessionId: string;
  page?: string;
  credential: CdpCredential | null;
}

export function parseCdpPath(url: string): CdpPath | undefined {
  const parsed = new URL(url, 'http://localhost');
  const query = parsed.searchParams;
  // The SDK's form, on the root of the API's address.
  if (parsed.pathname === '/' && query.has('sessionId') && query.has('apiKey')) {
    return { sessionId: query.get('sessionId')!, credential: { apiKey: query.get('apiKey')! } };
  }
  const m = PATH.exec(parsed.pathname);
  if (!m) {
    // Under /v1/cdp/ but not a CDP path: still ours, answered 404.
    return parsed.pathname.startsWith('/v1/cdp/') ? { sessionId: '', credential: null } : undefined;
  }
  let sessionId: string;
  try {
    sessionId = decodeURIComponent(m[1]!);
  } catch {
    return { sessionId: '', credential: null };
  }
  const token = query.get('token');
  return {
    sessionId,
    ...(m[3] === 'page' ? { page: decodeURIComponent(m[4]!) } : {}),
    credential: token === null ? null : { token },
  };
}

const REASONS: Record<number, string> = { 401: 'Unauthorized', 404: 'Not Found', 503: 'Service Unavailable' };

/** A plain HTTP answer on a socket that asked to upgrade, then hang up. */
function refuse(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}\r\n` +
      'Connection: close\r\n' +
      'Content-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  socket.once('finish', () => socket.destroy());
}

function asBuffer(data: RawData): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data);
  return data instanceof ArrayBuffer ? Buffer.from(data) : data;
}

export function byteLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

/** Close codes that may be sent in a close frame (1005, 1006 and 1015 may not). */
function sendableCode(code: number): number {
  if ((code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999)) return code;
  return code === 1005 ? 1000 : 1011; // no code given: normal; abnormal drop: error
}

function closeSocket(ws: WebSocket, code: number, reason: Buffer | string): void {
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.terminate();
  } else if (ws.readyState === WebSocket.OPEN) {
    // A close reason is at most 123 bytes.
    const text = Buffer.from(reason).subarray(0, 123).toString();
    ws.close(sendableCode(code), text);
  }
}

export function createCdpProxy(options: CdpProxyOptions): CdpProxy {
  const { log } = options;
  const maxPayload = options.maxPayload ?? 256 * 1024 * 1024;
  // noServer: the HTTP server is the HTTP layer's; we only take the upgrades it hands us.
  // No compression: Chromium does not negotiate it, and it would cost CPU on both hops. No
  // UTF-8 validation: the frames pass through, and the end that reads them validates them.
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload, skipUTF8Validation: true });
  const bySession = new Map<string, Set<Bridge>>();
  let closed = false;

  function bridge(client: WebSocket, upstreamUrl: string, target: CdpTarget, sessionId: string): void {
    // The hop to the browser is loopback, to a process of ours: masking its frames (which
    // protects HTTP intermediaries from script-chosen bytes) would only cost a pass over
    // every message; an all-zero mask makes ws skip it.
    const upstream = new WebSocket(upstreamUrl, { perMessageDeflate: false, maxPayload, skipUTF8Validation: true, generateMask: (mask) => void mask.fill(0) });
    const b: Bridge = { client, upstream };
    let set = bySession.get(sessionId);
    if (!set) bySession.set(sessionId, (set = new Set()));
    set.add(b);
    // What the client sends before the browser's socket is open is held, in order.
    const pending: { data: RawData; binary: boolean }[] = [];

    const count = (from: 'client' | 'browser', data: RawData) => {
      try {
        target.onMessage(from, data);
      } catch (err) {
        log.error({ sessionId, err: (err as Error).message }, 'cdp activity callback failed');
      }
    };

    client.on('message', (received, binary) => {
      count('client', received);
      const bytes = asBuffer(received);
      const refused = target.uploadsDir ? refuseLocalFiles(bytes, target.uploadsDir) : undefined;
      if (refused) {
        const { message, ...ids } = refused;
        if (client.readyState === WebSocket.OPEN) client.send(JSON.stringify({ ...ids, error: { code: -32000, message } }));
        return;
      }
      const data = target.downloadsDir ? (pinDownloadPath(bytes, target.downloadsDir) ?? bytes) : bytes;
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
      else if (upstream.readyState === WebSocket.CONNECTING) pending.push({ data, binary });
    });
    upstream.on('open', () => {
      for (const m of pending) upstream.send(m.data, { binary: m.binary });
      pending.length = 0;
    });
    upstream.on('message', (data, binary) => {
      count('browser', data);
      if (client.readyState === WebSocket.OPEN) client.send(data, { binary });
    });

    // Each side's end ends the other, with the same code and reason where allowed.
    client.on('close', (code, reason) => {
      set!.delete(b);
      if (set!.size === 0 && bySession.get(sessionId) === set) bySession.delete(sessionId);
      closeSocket(upstream, code, reason);
    });
    upstream.on('close', (code, reason) => closeSocket(client, code, reason.length ? reason : 'browser connection closed'));
    upstream.on('error', (err) => {
      // After the client left, this is only our own abort of a pending connection.
      if (client.readyState === WebSocket.OPEN) log.warn({ sessionId, err: err.message }, 'cdp upstream error');
      closeSocket(client, 1011, 'browser unreachable');
    });
    upstream.on('unexpected-response', (_req, res) => {
      log.warn({ sessionId, status: res.statusCode }, 'browser refused the cdp connection');
      closeSocket(client, 1011, `browser refused the connection (${res.statusCode})`);
      upstream.terminate();
    });
    client.on('error', (err) => {
      log.debug({ sessionId, err: err.message }, 'cdp client error');
      closeSocket(upstream, 1011, 'client error');
    });
  }

  async function accept(req: IncomingMessage, socket: Duplex, head: Buffer, path: CdpPath): Promise<void> {
    if (closed) return refuse(socket, 503, 'server is shutting down');
    if (!path.sessionId) return refuse(socket, 404, 'not a CDP endpoint');
    if (!path.credential) return refuse(socket, 401, 'missing token');
    let resolution: CdpResolution;
    try {
      resolution = await options.resolve(path.sessionId, path.credential);
    } catch (err) {
      log.error({ sessionId: path.sessionId, err: (err as Error).message }, 'cdp resolve failed');
      return refuse(socket, 503, 'session lookup failed');
    }
    if (resolution === 'not_found') return refuse(socket, 404, 'session not found');
    if (resolution === null) return refuse(socket, 401, 'token' in path.credential ? 'invalid token' : 'invalid API key');
    if (closed) return refuse(socket, 503, 'server is shutting down');
    if (socket.destroyed) return;
    const target = resolution;
    const browserUrl = new URL(target.wsEndpoint);
    const upstreamUrl = path.page ? `ws://${browserUrl.host}/devtools/page/${encodeURIComponent(path.page)}` : target.wsEndpoint;
    wss.handleUpgrade(req, socket, head, (client) => bridge(client, upstreamUrl, target, path.sessionId));
  }

  return {
    handleUpgrade(req, socket, head) {
      const path = req.url ? parseCdpPath(req.url) : undefined;
      if (!path) return false;
      // The socket may fail while resolve() runs; without a listener that would throw.
      socket.on('error', () => socket.destroy());
      accept(req, socket, head, path).catch((err: Error) => {
        log.error({ err: err.message }, 'cdp upgrade failed');
        refuse(socket, 503, 'upgrade failed');
      });
      return true;
    },
    closeSession(sessionId) {
      const set = bySession.get(sessionId);
      if (!set) return;
      bySession.delete(sessionId);
      for (const b of set) {
        closeSocket(b.client, 1001, 'session ended');
        b.upstream.terminate();
      }
    },
    connectionCount(sessionId) {
      if (sessionId !== undefined) return bySession.get(sessionId)?.size ?? 0;
      let n = 0;
      for (const set of bySession.values()) n += set.size;
      return n;
    },
    close() {
      closed = true;
      for (const id of [...bySession.keys()]) this.closeSession(id);
      wss.close();
    },
  };
}

/**
 * The browser's /json/version document with webSocketDebuggerUrl pointing at our public
 * endpoint, for GET /v1/cdp/{session_id}/json/version: clients given an http(s) URL
 * (Playwright's connectOverCDP, for one) read it to find the WebSocket.
 */
export async function versionDocument(wsEndpoint: string, publicWsUrl: string): Promise<Record<string, unknown>> {
  const { host } = new URL(wsEndpoint);
  const res = await fetch(`http://${host}/json/version`, { signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`browser answered ${res.status} for /json/version`);
  const doc = (await res.json()) as Record<string, unknown>;
  return { ...doc, webSocketDebuggerUrl: publicWsUrl };
}
