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
  /** Path and query the child must ask for. */
  readonly path: string;
  close(): Promise<void>;
}

export async function startCdpRelay(socketPath: string, cdpUrl: string): Promise<CdpRelay> {
  const target = new URL(cdpUrl);
  if (target.protocol !== 'ws:' && target.protocol !== 'wss:') throw new Error(`the CDP URL must be ws:// or wss://, not ${target.protocol}`);
  const path = `${target.pathname}${target.search}`;
  const secure = target.protocol === 'wss:';
  const port = Number(target.port || (secure ? 443 : 80));
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const open = new Set<Duplex>();

  const server = createServer((_req, res) => {
    res.writeHead(403).end();
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    if (req.url !== path) {
      client.end('HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n');
      return;
    }
    const upstream: Socket = secure ? connectTls({ host, port, servername: host }) : connectTcp({ host, port });
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
    lines.push(`Host: ${target.host}`);
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
    path,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of open) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
