// The server's end of the CDP relay: an HTTP server on a Unix socket in the run's temporary
// directory (bound into the sandbox, whose network namespace has nothing else). It accepts
// one thing only, the WebSocket upgrade to the session's own CDP path and query, and pipes
// it to the real endpoint; any other request is refused, so the socket is no way into the
// server's other routes.
import { createServer, type IncomingMessage } from 'node:http';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import type { Duplex } from 'node:stream';

export interface CdpRelay {
  /** Points the relay at the run's endpoint (a relay is made before its run is known):
   * answers the path and query the child must ask for. Once only: another endpoint after
   * the first throws. */
  target(cdpUrl: string): string;
  /** Whether the listening socket keeps the process alive (not while its child waits). */
  hold(on: boolean): void;
  close(): Promise<void>;
}

interface Target {
  url: URL;
  path: string;
  secure: boolean;
  host: string;
  port: number;
}

function parseTarget(cdpUrl: string): Target {
  const url = new URL(cdpUrl);
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new Error(`the CDP URL must be ws:// or wss://, not ${url.protocol}`);
  const secure = url.protocol === 'wss:';
  return { url, path: `${url.pathname}${url.search}`, secure, host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || (secure ? 443 : 80)) };
}

export async function startCdpRelay(socketPath: string): Promise<CdpRelay> {
  let target: Target | undefined;
  const open = new Set<Duplex>();

  const server = createServer((_req, res) => {
    res.writeHead(403).end();
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    if (!target || req.url !== target.path) {
      client.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    const { secure, host, port, path, url } = target;
    const upstream: Socket = secure ? connectTls({ host, port, servername: host }) : connectTcp({ host, port });
    // CDP is many small messages each awaited: Nagle's algorithm held some back until the
    // peer's delayed ACK (runs measured bimodal, some 50 ms slower in their connect alone).
    upstream.setNoDelay(true);
    open.add(upstream);
    upstream.on('close', () => {
      open.delete(upstream);
      client.destroy();
    });
    upstream.on('error', () => upstream.destroy());
    client.on('close', () => upstream.destroy());
    // The request again, with the real Host: the child only knows its loopback address.
    const lines = [`GET ${path} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      if (req.rawHeaders[i].toLowerCase() !== 'host') lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    }
    lines.push(`Host: ${url.host}`);
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) upstream.write(head);
    client.pipe(upstream).pipe(client);
  });
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    target(cdpUrl) {
      // Bound once (a warm pair's child connects before its run): never pointed elsewhere after.
      if (target && target.url.href !== new URL(cdpUrl).href) throw new Error('the relay is bound to another endpoint');
      target = parseTarget(cdpUrl);
      return target.path;
    },
    hold(on) {
      if (on) server.ref();
      else server.unref();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
