// A rehearsal of Playwright's connectOverCDP against a stand-in browser on the sandbox's own
// loopback, done by a warm child before its run is known. The first connection of a
// process costs 120-200 ms more than the next ones (Playwright initialises its modules
// lazily and V8 has not compiled the path yet; measured 120-200 ms first against 16-70 ms
// after); rehearsing moves that cost out of the run. The stand-in speaks just enough CDP
// over a minimal WebSocket: Browser.getVersion, and an empty result for everything else.
import { createHash } from 'node:crypto';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { chromium as Chromium } from 'playwright-core';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const VERSION = {
  protocolVersion: '1.3',
  product: 'Chrome/120.0.0.0',
  revision: '@0',
  userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36',
  jsVersion: '12.0',
};

function frame(text: string): Buffer {
  const payload = Buffer.from(text);
  const head =
    payload.length < 126
      ? Buffer.from([0x81, payload.length])
      : payload.length < 65536
        ? Buffer.from([0x81, 126, payload.length >> 8, payload.length & 255])
        : Buffer.concat([Buffer.from([0x81, 127]), Buffer.from(new BigUint64Array([BigInt(payload.length)]).buffer).reverse()]);
  return Buffer.concat([head, payload]);
}

/** Speaks CDP on one connection: answers each command, ignores everything else. */
function serve(socket: Socket): void {
  let buffer = Buffer.alloc(0);
  let open = false;
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    if (!open) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const key = /sec-websocket-key:\s*(\S+)/i.exec(buffer.subarray(0, end).toString())?.[1] ?? '';
      const accept = createHash('sha1')
        .update(key + GUID)
        .digest('base64');
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
      buffer = buffer.subarray(end + 4);
      open = true;
    }
    for (;;) {
      if (buffer.length < 2) return;
      const opcode = buffer[0] & 0x0f;
      let length = buffer[1] & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (buffer.length < 4) return;
        length = buffer.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (buffer.length < 10) return;
        length = Number(buffer.readBigUInt64BE(2));
        offset = 10;
      }
      const masked = (buffer[1] & 0x80) !== 0;
      const mask = masked ? buffer.subarray(offset, offset + 4) : undefined;
      if (masked) offset += 4;
      if (buffer.length < offset + length) return;
      const payload = Buffer.from(buffer.subarray(offset, offset + length));
      buffer = buffer.subarray(offset + length);
      if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4];
      if (opcode === 8) return void socket.end();
      if (opcode !== 1) continue;
      const command = JSON.parse(payload.toString()) as { id: number; method: string; sessionId?: string };
      const result = command.method === 'Browser.getVersion' ? VERSION : {};
      socket.write(frame(JSON.stringify({ id: command.id, result, ...(command.sessionId ? { sessionId: command.sessionId } : {}) })));
    }
  });
}

/** Connects once to the stand-in and lets go, and loads an ES module (the user's code is
 * one: the loader's first use costs 15-40 ms); never throws (a failed rehearsal costs only
 * itself). */
export async function rehearse(chromium: typeof Chromium): Promise<void> {
  const esModule: string = 'data:text/javascript,export default 1';
  await import(esModule).catch(() => {});
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    serve(socket);
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = server.address() as AddressInfo;
    const browser = await chromium.connectOverCDP(`ws://127.0.0.1:${port}/devtools/browser/rehearsal`, { timeout: 5000 });
    browser.contexts();
    for (const socket of sockets) socket.destroy();
    await Promise.race([new Promise((resolve) => browser.once('disconnected', resolve)), new Promise((resolve) => setTimeout(resolve, 1000))]);
  } catch {
    // Nothing to do: the run connects cold.
  } finally {
    for (const socket of sockets) socket.destroy();
    server.close();
  }
}
