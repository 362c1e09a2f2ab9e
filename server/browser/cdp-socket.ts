// Playwright over a browser's DevTools WebSocket, without permessage-deflate. Playwright's
// own connectOverCDP offers the extension and Chromium takes it: every CDP message is then
// compressed by the browser and inflated here, each inflation a trip through libuv's thread
// pool before Playwright sees the message. An action of a few round trips pays it on each:
// an aria snapshot of a small page took ~35 ms so against ~28 ms without it (and over
// Playwright's own pipe), click and navigate alike (.scratch measurements, bench/mcp for the
// end-to-end figures). Between two processes of one machine compression saves nothing.
import type { Browser, ConnectOverCDPOptions } from 'playwright-core';
import { WebSocket } from 'ws';
import { connectOverTransport, type ConnectionTransport } from './playwright-transport.js';

class SocketTransport implements ConnectionTransport {
  onmessage?: (message: object) => void;
  private _onclose?: (reason?: string) => void;
  private closed = false;

  constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as object;
      // As Playwright's own transports: each message in its own task.
      setImmediate(() => this.onmessage?.(message));
    });
    ws.once('close', (_code, reason) => this.ended(reason.toString()));
    ws.on('error', () => {}); // 'close' follows
  }

  get onclose() {
    return this._onclose;
  }

  set onclose(fn) {
    this._onclose = fn;
    if (fn && this.closed) fn();
  }

  send(message: object): void {
    if (this.ws.readyState !== WebSocket.OPEN) return; // closing: Playwright learns it from onclose
    this.ws.send(JSON.stringify(message));
  }

  close(): void {
    this.ws.close();
  }

  private ended(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    this._onclose?.(reason);
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
