// How long an HTTP server of ours keeps an idle kept-alive connection open.
import type { Server } from 'node:http';

/**
 * A server closes an idle kept-alive connection after keepAliveTimeout; a client that sends
 * on it in that instant gets no answer ("other side closed": fetch trusts a connection for
 * the server's advertised time less 1 s, on a coarse timer, and a loaded machine makes it
 * late). Node's 5 s made that a routine failure of a busy test run; connections idle a
 * minute are rare. headersTimeout stays above it, as Node requires for kept-alive requests.
 */
export function keepIdleConnections(server: Server, seconds: number): void {
  server.keepAliveTimeout = seconds * 1000;
  server.headersTimeout = (seconds + 1) * 1000;
}
