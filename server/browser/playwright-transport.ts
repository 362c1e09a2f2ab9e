// Playwright's client driven over a connection of our own choosing. chromium.connectOverCDP
// also takes a ConnectionTransport (Playwright's client checks for an object with send and
// close): the same one its own launch uses for a pipe, not in its public types, hence the
// declaration here. cdp-pipe.ts and cdp-socket.ts are the two we use.
import { chromium, type Browser, type ConnectOverCDPOptions } from 'playwright-core';

/** Playwright's ConnectionTransport (playwright-core server/transport.ts). */
export interface ConnectionTransport {
  send(message: object): void;
  close(): void;
  onmessage?: (message: object) => void;
  onclose?: (reason?: string) => void;
}

/**
 * What our transports share: messages handed on each in its own task, as Playwright's own
 * transports do, and an end told once, to an onclose set before or after it.
 */
export abstract class TransportBase implements ConnectionTransport {
  onmessage?: (message: object) => void;
  private _onclose?: (reason?: string) => void;
  private _ended = false;

  get onclose() {
    return this._onclose;
  }

  set onclose(fn) {
    this._onclose = fn;
    if (fn && this._ended) fn();
  }

  get ended(): boolean {
    return this._ended;
  }

  abstract send(message: object): void;
  abstract close(): void;

  protected deliver(message: object): void {
    setImmediate(() => this.onmessage?.(message));
  }

  /** The connection is over (told once). */
  protected end(reason?: string): void {
    if (this._ended) return;
    this._ended = true;
    this._onclose?.(reason);
  }
}

type ConnectOverTransport = (transport: ConnectionTransport, options?: ConnectOverCDPOptions) => Promise<Browser>;

/** Playwright connected over a transport, as chromium.connectOverCDP is over a URL. */
export function connectOverTransport(transport: ConnectionTransport, options?: ConnectOverCDPOptions): Promise<Browser> {
  const connect = chromium.connectOverCDP.bind(chromium) as unknown as ConnectOverTransport;
  return connect(transport, options);
}
