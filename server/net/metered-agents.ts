// Counting the bytes exchanged with an upstream proxy: proxy-chain does not split its
// counts by upstream, and the upstream can change while a browser connection stays open, so
// the upstream's HTTP(S) agents hand every socket they open to a meter, and to a watch that
// tells the upstream's owner when a connection to it cannot be made.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';

/** Keeps a running byte total over the sockets it is given, open ones included. */
export class SocketMeter {
  private closedBytes = 0;
  private readonly open = new Set<net.Socket>();

  track(socket: net.Socket): void {
    if (this.open.has(socket)) return;
    this.open.add(socket);
    socket.once('close', () => {
      if (!this.open.delete(socket)) return;
      this.closedBytes += (socket.bytesRead ?? 0) + (socket.bytesWritten ?? 0);
    });
  }

  total(): number {
    let n = this.closedBytes;
    for (const s of this.open) n += (s.bytesRead ?? 0) + (s.bytesWritten ?? 0);
    return n;
  }
}

function asSocket(stream: Duplex | null | undefined): net.Socket | null {
  return stream instanceof net.Socket ? stream : null;
}

type Connect = (err: Error | null, stream: Duplex) => void;

export type OnSocket = (socket: net.Socket) => void;

/** Opens a connection with the agent's own method and hands its socket over, sync or async. */
function watched(onSocket: OnSocket, create: (callback?: Connect) => Duplex | null | undefined, callback?: Connect) {
  const seen = new WeakSet<net.Socket>();
  const hand = (stream: Duplex | null | undefined) => {
    const s = asSocket(stream);
    if (s && !seen.has(s)) {
      seen.add(s);
      onSocket(s);
    }
  };
  const wrapped = callback
    ? (err: Error | null, stream: Duplex) => {
        hand(stream);
        callback(err, stream);
      }
    : undefined;
  const stream = create(wrapped);
  hand(stream);
  return stream;
}

/** An http.Agent whose new sockets are handed to `onSocket` (metered and watched: the upstream proxy's). */
export class WatchedHttpAgent extends http.Agent {
  constructor(
    options: http.AgentOptions,
    private readonly onSocket: OnSocket,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: Connect): Duplex | null | undefined {
    return watched(this.onSocket, (cb) => super.createConnection(options, cb), callback);
  }
}

export class WatchedHttpsAgent extends https.Agent {
  constructor(
    options: https.AgentOptions,
    private readonly onSocket: OnSocket,
  ) {
    super(options);
  }

  override createConnection(options: https.RequestOptions, callback?: Connect): Duplex | null | undefined {
    return watched(this.onSocket, (cb) => super.createConnection(options, cb), callback);
  }
}

/** Calls `report` when the socket fails before it is connected (TLS: before its handshake is done). */
export function reportConnectFailure(socket: net.Socket, report: () => void): void {
  let connected = false;
  socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => {
    connected = true;
  });
  socket.once('error', () => {
    if (!connected) report();
  });
}

export const AGENT_OPTIONS: http.AgentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 32, scheduling: 'lifo', timeout: 60_000 };
