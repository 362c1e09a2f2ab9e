// Playwright on a session's browser without compression. Playwright's CDP client offers
// permessage-deflate and Chromium's DevTools socket accepts it, so every CDP message (a
// screenshot each observation) would be deflated by the browser and inflated here. This
// loopback relay declines the extension towards Playwright and opens the browser's socket
// without it, passing frames through untouched. One relay serves the runner; each
// connection has its own unguessable path, valid once.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';

const MAX_PAYLOAD = 256 * 1024 * 1024;

export class CdpRelay {
  private server: Promise<{ http: Server; port: number }> | undefined;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: MAX_PAYLOAD });
  /** Paths not yet connected to, and the browser endpoint each leads to. */
  private readonly pending = new Map<string, string>();

  /** A ws:// URL that reaches wsEndpoint uncompressed, for one connection. */
  async url(wsEndpoint: string): Promise<{ url: string; forget(): void }> {
    const { port } = await (this.server ??= this.listen());
    const path = `/${randomBytes(16).toString('hex')}`;
    this.pending.set(path, wsEndpoint);
    return { url: `ws://127.0.0.1:${port}${path}`, forget: () => this.pending.delete(path) };
  }

  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    const s = await this.server?.catch(() => undefined);
    if (s) await new Promise<void>((r) => s.http.close(() => r()));
  }

  private async listen(): Promise<{ http: Server; port: number }> {
    const http = createServer((_req, res) => res.writeHead(404).end());
    http.on('upgrade', (req, socket, head) => {
      const target = this.pending.get(req.url ?? '');
      if (!target) return socket.destroy();
      this.pending.delete(req.url ?? '');
      this.wss.handleUpgrade(req, socket, head, (client) => this.bridge(client, target));
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    return { http, port: (http.address() as AddressInfo).port };
  }

  private bridge(client: WebSocket, target: string): void {
    const upstream = new WebSocket(target, { perMessageDeflate: false, maxPayload: MAX_PAYLOAD });
    const held: { data: WebSocket.RawData; binary: boolean }[] = [];
    client.on('message', (data, binary) => {
      if (upstream.readyState === WebSocket.OPEN) upstream.send(data, { binary });
      else if (upstream.readyState === WebSocket.CONNECTING) held.push({ data, binary });
    });
    upstream.on('open', () => {
      for (const m of held) upstream.send(m.data, { binary: m.binary });
      held.length = 0;
    });
    upstream.on('message', (data, binary) => {
      if (client.readyState === WebSocket.OPEN) client.send(data, { binary });
    });
    const end = (ws: WebSocket) => {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.terminate();
    };
    client.on('close', () => end(upstream));
    upstream.on('close', () => end(client));
    client.on('error', () => end(upstream));
    upstream.on('error', () => end(client));
  }
}
