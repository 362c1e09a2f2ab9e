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

type ConnectOverTransport = (transport: ConnectionTransport, options?: ConnectOverCDPOptions) => Promise<Browser>;

/** Playwright connected over a transport, as chromium.connectOverCDP is over a URL. */
export function connectOverTransport(transport: ConnectionTransport, options?: ConnectOverCDPOptions): Promise<Browser> {
  const connect = chromium.connectOverCDP.bind(chromium) as unknown as ConnectOverTransport;
  return connect(transport, options);
}
