// Playwright over a browser's DevTools WebSocket, without permessage-deflate. Playwright's
// own connectOverCDP offers the extension and Chromium takes it: every CDP message is then
// compressed by the browser and inflated here, each inflation a trip through libuv's thread
// pool before Playwright sees the message. An action of a few round trips pays it on each:
// an aria snapshot of the form fixture on a session-flagged browser took ~35 ms so, against
// ~28 ms without it (as over Playwright's own pipe), click and navigate alike (bench/mcp has
// the end-to-end figures). Between two processes of one machine compression saves nothing.
import type { Browser, ConnectOverCDPOptions } from 'playwright-core';
import { WebSocket } from 'ws';
import { connectOverTransport, TransportBase } from './playwright-transport.js';

class SocketTransport extends TransportBase {
  constructor(private readonly ws: WebSocket) {
    super();
    ws.on('message', (data) => this.deliver(JSON.parse(data.toString()) as object));
    ws.once('close', (_code, reason) => this.end(reason.toString()));
    ws.on('error', () => {}); // 'close' follows
  }

  send(message: object): void {
    if (this.ws.readyState !== WebSocket.OPEN) return; // closing: Playwright learns it from onclose
    this.ws.send(JSON.stringify(message));
  }

  close(): void {
    this.ws.close();
  }
}

function open(wsEndpoint: string, timeoutMs: number): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsEndpoint, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`WebSocket ${wsEndpoint} did not open within ${timeoutMs} ms`));
    }, timeoutMs);
    ws.once('open', () => {
      clearTimeout(timer);
      resolve(ws);
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** chromium.connectOverCDP on a browser's own ws:// endpoint, with uncompressed messages. */
export async function connectOverSocket(wsEndpoint: string, options: ConnectOverCDPOptions = {}): Promise<Browser> {
  const ws = await open(wsEndpoint, options.timeout || 30_000);
  try {
    return await connectOverTransport(new SocketTransport(ws), options);
  } catch (err) {
    ws.terminate();
    throw err;
  }
}
