// Playwright over a real browser's DevTools WebSocket through cdp-socket.ts: pages driven,
// messages large and many at once, the end of the browser seen as a disconnect; and the
// handshake offers no compression (what the module is for).
import { rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type RunningBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { chromiumPath, tempBrowsersDir, testLog } from './test-support.js';
import { connectOverSocket } from './cdp-socket.js';

describe('Playwright over the DevTools WebSocket, uncompressed', () => {
  let dir: string;
  let running: RunningBrowser;

  beforeAll(async () => {
    dir = tempBrowsersDir();
    running = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: true }, { chromiumPath, rootDir: join(dir, 's'), log: testLog() });
  });

  afterAll(async () => {
    await running?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('offers no permessage-deflate in its handshake', async () => {
    // A WebSocket server that would accept compression, standing in for the browser: it
    // notes what the client offers, then hangs up, which the connect reports as a failure.
    const offered: (string | undefined)[] = [];
    const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: true });
    wss.on('connection', (ws, req) => {
      offered.push(req.headers['sec-websocket-extensions']);
      ws.close();
    });
    await new Promise<void>((r) => wss.once('listening', r));
    try {
      await expect(connectOverSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/devtools/browser/x`, { timeout: 10_000 })).rejects.toThrow();
      expect(offered).toEqual([undefined]);
    } finally {
      await new Promise((r) => wss.close(r));
    }
  });

  it('drives pages, carries large and concurrent messages, and reports the browser ending', async () => {
    const browser = await connectOverSocket(running.wsEndpoint);
    expect(browser.version()).toMatch(/^\d+\./);
    // The session browser's own first tab, as the MCP driver uses it.
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.setContent('<p>socket</p>');
    expect(await page.textContent('p')).toBe('socket');
    // 3 MB in one answer, which Chromium sends in several frames.
    const big = await page.evaluate(() => 'x'.repeat(3_000_000) + 'end');
    expect(big.length).toBe(3_000_003);
    expect(big.endsWith('xend')).toBe(true);
    const values = await Promise.all(Array.from({ length: 50 }, (_, i) => page.evaluate((n) => n * 2, i)));
    expect(values).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
    const disconnected = new Promise<void>((r) => browser.once('disconnected', () => r()));
    await running.close();
    await disconnected;
    expect(browser.isConnected()).toBe(false);
  });
});
