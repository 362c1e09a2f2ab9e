// Playwright over a browser's --remote-debugging-pipe instead of its DevTools WebSocket.
// Playwright's client negotiates permessage-deflate with Chromium's WebSocket, so every CDP
// message would be compressed by the browser and inflated here: about 12 ms of the server's
// CPU per fetched page, measured. The pipe carries the same JSON without it. The tool tests
// run every fetch through it.
import type { Browser, ConnectOverCDPOptions } from 'playwright-core';
import { connectOverTransport, TransportBase } from './playwright-transport.js';

interface CdpPipe {
  input: NodeJS.WritableStream;
  output: NodeJS.ReadableStream;
}

class PipeTransport extends TransportBase {
  private pending: Buffer[] = [];
  private readonly onData = (chunk: Buffer) => this.dispatch(chunk);
  private readonly onEnd = () => this.close();

  constructor(private readonly pipe: CdpPipe) {
    super();
    pipe.output.on('data', this.onData);
    pipe.output.once('close', this.onEnd);
  }

  send(message: object): void {
    if (this.ended) throw new Error('The browser pipe is closed');
    this.pipe.input.write(`${JSON.stringify(message)}\0`);
  }

  /** Stops listening; the pipe itself stays open (closing it would end the browser). */
  close(): void {
    this.pipe.output.off('data', this.onData);
    this.pipe.output.off('close', this.onEnd);
    this.end();
  }

  private dispatch(chunk: Buffer): void {
    let start = 0;
    for (let end = chunk.indexOf(0); end !== -1; start = end + 1, end = chunk.indexOf(0, start)) {
      this.pending.push(chunk.subarray(start, end));
      const message = JSON.parse(Buffer.concat(this.pending).toString('utf8')) as object;
      this.pending = [];
      this.deliver(message);
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start));
  }
}

/** Playwright connected over the browser's pipe, as chromium.connectOverCDP is over a URL. */
export function connectOverPipe(pipe: CdpPipe, options?: ConnectOverCDPOptions): Promise<Browser> {
  return connectOverTransport(new PipeTransport(pipe), options);
}
