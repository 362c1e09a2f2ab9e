// Forwarding to the owning node, byte for byte: an HTTP request with its body streamed up
// and the answer (status, headers, body) streamed back; a WebSocket upgrade as a raw socket
// pipe once the upgrade request is written. Both add the cluster proof (proof.ts), keep the
// client's headers (its API key is checked again by the owner), and apply backpressure
// through pipe() in both directions.
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import type { Duplex } from 'node:stream';

/** Headers that belong to one connection, never forwarded (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

// Kept-alive connections between nodes: a forwarded request pays no TCP handshake.
const agents = { http: new HttpAgent({ keepAlive: true, maxSockets: 256 }), https: new HttpsAgent({ keepAlive: true, maxSockets: 256 }) };

/** The request's headers as [name, value] pairs in their order, minus hop-by-hop ones, those
 *  named in Connection, and those the forwarder sets itself (`own`: its values, not the client's). */
function passHeaders(rawHeaders: string[], upgrade: boolean, own: Record<string, string> = {}): [string, string][] {
  const named = new Set<string>();
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].toLowerCase() === 'connection') for (const n of rawHeaders[i + 1].split(',')) named.add(n.trim().toLowerCase());
  }
  const out: [string, string][] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    // An upgrade keeps its Connection and Upgrade headers: they are the request.
    if (upgrade && (name === 'connection' || name === 'upgrade')) {
      out.push([rawHeaders[i], rawHeaders[i + 1]]);
      continue;
    }
    if (HOP_BY_HOP.has(name) || named.has(name) || Object.hasOwn(own, name)) continue;
    out.push([rawHeaders[i], rawHeaders[i + 1]]);
  }
  return out;
}

/** Bodies up to this size are read before they are sent, so a send can be tried again. */
export const REPLAYABLE_BYTES = 1024 * 1024;

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

/** The owner could not be reached, or answered that it is not the node that was meant
 *  (MISDIRECTED_HEADER): nothing was sent to the client, and the request can be sent again. */
export const AGAIN = 'again';

/** On an answer 421 from a node: it is not the node the forwarder meant (TARGET_HEADER). */
export const MISDIRECTED_HEADER = 'x-cluster-misdirected';

/**
 * Sends the request to `target` (an origin) and streams the answer into `res`. Resolves with
 * the answer's status once it has been sent (or with 502 when the owner could not be
 * reached: then a general error body was sent, if nothing had been yet).
 *
 * A kept-alive connection may be closed by the owner just as a request is sent on it
 * (its keep-alive time-out): a request whose body is known in full (none, `body`, or one
 * up to REPLAYABLE_BYTES, read first) is then sent again once on a new connection. A larger
 * or chunked body streams on a connection of its own, which cannot be closed that way.
 *
 * `again`: the caller's target may be stale (a remembered owner). When the owner cannot be
 * reached or says it is not the one meant, resolve with AGAIN and send nothing, so the caller
 * can look again; only when the request's body is still unread (none, or the caller's `body`).
 */
export async function forwardHttp(
  req: IncomingMessage,
  res: ServerResponse,
  target: string,
  proof: Record<string, string>,
  body?: Buffer,
  o: { again?: boolean } = {},
): Promise<number | typeof AGAIN> {
  const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
  const chunked = req.headers['transfer-encoding'] !== undefined;
  const again = o.again === true && (body !== undefined || (!chunked && !declared));
  if (body === undefined && !chunked && declared !== undefined && declared <= REPLAYABLE_BYTES)
    body = declared === 0 ? Buffer.alloc(0) : await readAll(req).catch(() => undefined);
  const streamed = body === undefined && (chunked || declared !== undefined);
  const url = new URL(target);
  const https = url.protocol === 'https:';
  const headers: [string, string][] = [...passHeaders(req.rawHeaders, false, proof), ...Object.entries(proof)];
  if (body !== undefined && (declared !== undefined || body.length > 0)) {
    for (let i = headers.length - 1; i >= 0; i--) if (headers[i][0].toLowerCase() === 'content-length') headers.splice(i, 1);
    headers.push(['content-length', String(body.length)]);
  }
  return new Promise((resolve) => {
    let out: ClientRequest;
    let answered = false;
    // The client gave up: so does the owner's request.
    const clientGone = () => {
      if (!res.writableFinished) out.destroy();
    };
    res.on('close', clientGone);
    const unreachable = () => {
      if (answered) return void res.destroy();
      answered = true;
      if (again) {
        res.off('close', clientGone);
        return resolve(AGAIN);
      }
      if (!res.headersSent) {
        const text = JSON.stringify({ error: { code: 502, message: 'The node that runs this session could not be reached' } });
        res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      } else res.destroy();
      resolve(502);
    };
    const send = (retry: boolean) => {
      // The request target exactly as the client sent it: the proof signs it.
      out = (https ? httpsRequest : httpRequest)({
        protocol: url.protocol,
        hostname: url.hostname,
        port: url.port,
        path: req.url ?? '/',
        method: req.method,
        headers: headers.flat(),
        agent: streamed ? false : https ? agents.https : agents.http,
        setHost: false,
      });
      out.on('error', (err: NodeJS.ErrnoException) => {
        if (!answered && retry && out.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) return send(false);
        unreachable();
      });
      out.on('response', (answer) => {
        if (again && answer.statusCode === 421 && answer.headers[MISDIRECTED_HEADER] !== undefined) {
          answer.resume();
          return unreachable();
        }
        answered = true;
        res.writeHead(answer.statusCode ?? 502, passHeaders(answer.rawHeaders, false).flat());
        // Server-sent events and chunked downloads: every chunk goes out as it comes.
        res.flushHeaders();
        answer.pipe(res);
        answer.on('error', () => res.destroy());
        res.on('close', () => {
          if (!answer.complete) answer.destroy();
          resolve(answer.statusCode ?? 502);
        });
      });
      if (body !== undefined) out.end(body);
      else if (streamed) req.pipe(out);
      else out.end();
    };
    send(body !== undefined || !streamed);
  });
}

/**
 * Pipes a WebSocket upgrade to `target`: writes the upgrade request (the client's, with the
 * proof) on a new connection, then joins the two sockets. The owner's answer (101, or its
 * refusal) reaches the client as it is. Either side closing closes the other.
 *
 * `again`: as forwardHttp's. Called, with the client left untouched, when the owner cannot be
 * reached or its answer is a 421 with MISDIRECTED_HEADER; the caller may then look again.
 * The client's bytes are piped up only once the owner has answered (a WebSocket client sends
 * nothing before its 101), so nothing of the client's is lost to a node that was not meant.
 */
export function forwardUpgrade(
  req: IncomingMessage,
  client: Duplex,
  head: Buffer,
  target: string,
  proof: Record<string, string>,
  o: { again?: () => void } = {},
): void {
  const url = new URL(target);
  const https = url.protocol === 'https:';
  const port = Number(url.port) || (https ? 443 : 80);
  const upstream: Socket = https ? tlsConnect({ host: url.hostname, port, servername: url.hostname }) : netConnect({ host: url.hostname, port });
  let answered = false;
  /** Closed, or handed back: either happens once. */
  let done = false;
  const close = () => {
    done = true;
    client.destroy();
    upstream.destroy();
  };
  /** Gives the client back to the caller: the owner was not reachable, or not the one meant. */
  const handBack = () => {
    if (done) return;
    done = true;
    client.off('error', close);
    client.off('close', close);
    upstream.destroy();
    o.again!();
  };
  client.on('error', close);
  client.on('close', close);
  upstream.on('error', () => {
    if (answered) return close();
    if (o.again) return handBack();
    // Nothing was said to the client yet: a plain HTTP refusal.
    const text = JSON.stringify({ error: 'The node that runs this session could not be reached' });
    client.end(`HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`);
    close();
  });
  // Closed before it answered: as unreachable.
  upstream.on('close', () => (answered || !o.again ? close() : handBack()));
  upstream.once(https ? 'secureConnect' : 'connect', () => {
    // Each CDP message is a small write: sent at once, not held back for the next (Nagle).
    upstream.setNoDelay(true);
    if ('setNoDelay' in client && typeof client.setNoDelay === 'function') (client as Socket).setNoDelay(true);
    const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`];
    for (const [name, value] of [...passHeaders(req.rawHeaders, true, proof), ...Object.entries(proof)]) lines.push(`${name}: ${value}`);
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) upstream.write(head);
    upstream.once('data', (first: Buffer) => {
      if (o.again && isMisdirected(first)) return handBack();
      answered = true;
      client.write(first);
      upstream.pipe(client);
      client.pipe(upstream);
    });
  });
}

/** An answer's first bytes: a 421 that carries MISDIRECTED_HEADER. */
function isMisdirected(first: Buffer): boolean {
  const text = first.subarray(0, 1024).toString('latin1');
  return /^HTTP\/1\.[01] 421 /.test(text) && text.toLowerCase().includes(`\r\n${MISDIRECTED_HEADER}:`);
}
