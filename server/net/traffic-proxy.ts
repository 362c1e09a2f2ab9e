// One local forwarding proxy per session browser. Chromium is launched with
// `--proxy-server=http://127.0.0.1:<port> --proxy-bypass-list=<-loopback>`, so everything it
// fetches (plain HTTP as absolute-form requests, HTTPS/WSS/WS as CONNECT tunnels) passes
// through here, which lets the service:
//  - count the bytes exchanged with the network (both ways), and separately the bytes
//    exchanged with an upstream proxy when the session uses one;
//  - record the hostnames contacted and count requests (a CONNECT tunnel counts as one: what
//    runs inside it is encrypted);
//  - refuse private, loopback and link-local destinations unless the operator allows them
//    (SSRF protection). The hostname is resolved, every address checked, and the connection
//    is made to the checked addresses (a pinned `lookup`), so DNS rebinding between the
//    check and the connection cannot slip through;
//  - optionally chain to an upstream HTTP(S) or SOCKS5 proxy. Then the destination is
//    resolved by the upstream and is not checked here, but the upstream's own address is
//    (unless allowed, or the operator configured the upstream: the service proxy pool);
//  - tell the upstream's owner when a connection to it cannot be made (the service proxy
//    pool rests such a proxy).
//
// Built on proxy-chain's Server: prepareRequestFunction applies the policy (throwing
// RequestError to refuse) and picks the upstream, the lookup and the agents; per-connection
// byte counts come from getConnectionStats / 'connectionClosed'. HTTP(S) upstream bytes are
// counted on the sockets the upstream agents create (proxy-chain does not split its counts by
// upstream, and the upstream can change while a browser connection stays open). proxy-chain
// opens SOCKS connections itself, without agents: there the bytes are the target bytes of the
// browser connections whose requests went through the SOCKS upstream, since the SOCKS proxy
// is those connections' target.
//
// Credentials: the upstream password only lives in the upstream URL handed to proxy-chain,
// which sends it as Proxy-Authorization to the upstream. Neither that URL nor any request
// header is ever logged.
//
// Apart from this module: an upstream setting checked and made a URL (upstream-proxy.ts), the
// lookup pinned to checked addresses (pinned-lookup.ts), and the upstream's metered agents
// (metered-agents.ts).
import http from 'node:http';
import net from 'node:net';
import type { Logger } from 'pino';
import { RequestError, Server, type ConnectionStats, type PrepareRequestFunctionOpts, type PrepareRequestFunctionResult } from 'proxy-chain';
import { assertPublicUrl, UrlPolicyError } from './address-policy.js';
import { AGENT_OPTIONS, reportConnectFailure, SocketMeter, WatchedHttpAgent, WatchedHttpsAgent } from './metered-agents.js';
import { pinnedLookup, type LookupFunction } from './pinned-lookup.js';
import { stripBrackets, upstreamProxyUrl, withAddress, type ResolvedUpstream, type UpstreamProxy } from './upstream-proxy.js';

export interface TrafficProxyOptions {
  allowPrivateNetworks: boolean;
  upstream?: UpstreamProxy;
  log: Logger;
}

export interface TrafficStats {
  networkBytes: number;
  proxyBytes: number;
  requests: number;
  /** sorted, unique */
  domains: string[];
}

export interface TrafficProxy {
  port: number;
  /** http://127.0.0.1:port */
  url: string;
  /** Includes the bytes of connections still open. */
  stats(): TrafficStats;
  /** A warm pooled browser is launched before its session's proxy settings are known. */
  setUpstream(upstream?: UpstreamProxy): void;
  /** Closes the listener and all connections. */
  close(): Promise<void>;
}

const LOOPBACK = '127.0.0.1';
/** Bound on the recorded domain set (a page can invent hostnames without end). */
const MAX_DOMAINS = 10_000;
/** How long a checked upstream address list is reused. */
const UPSTREAM_RESOLVE_TTL_MS = 30_000;

/** The hostname as recorded in the domain list: lower case, no brackets, no trailing dot. */
function domainOf(hostname: string): string {
  return stripBrackets(hostname).toLowerCase().replace(/\.$/, '');
}

/** Removes anything that looks like credentials in a URL from a message before it is logged. */
function redact(text: string): string {
  return text.replace(/\/\/[^\s/@"']*@/g, '//[redacted]@');
}

function targetBytes(stats: ConnectionStats | undefined): number {
  if (!stats) return 0;
  return (stats.trgTxBytes ?? 0) + (stats.trgRxBytes ?? 0);
}

/** Starts a proxy on 127.0.0.1 (a free port) for one browser. */
export async function startTrafficProxy(options: TrafficProxyOptions): Promise<TrafficProxy> {
  const allowPrivate = options.allowPrivateNetworks;
  let upstream: ResolvedUpstream | undefined = options.upstream ? upstreamProxyUrl(options.upstream) : undefined;
  let log = options.log.child({ component: 'traffic-proxy' });

  const domains = new Set<string>();
  let requests = 0;
  let closedConnectionBytes = 0;
  const upstreamMeter = new SocketMeter();
  const refusedLogged = new Set<string>();
  let domainsCapped = false;
  const record = (hostname: string) => {
    requests++;
    const d = domainOf(hostname);
    if (domains.has(d)) return;
    if (domains.size >= MAX_DOMAINS) {
      if (!domainsCapped) log.warn({ max: MAX_DOMAINS }, 'traffic proxy domain list is full; further new domains are not recorded');
      domainsCapped = true;
      return;
    }
    domains.add(d);
  };

  // Own agents, never the global one: keep-alive sockets are not shared between sessions,
  // and close() can destroy them.
  const directAgent = new http.Agent(AGENT_OPTIONS);
  const onUpstreamSocket = (socket: net.Socket) => {
    // Metered once connected: a socket that never connects counts the request it queued in
    // bytesWritten, though nothing was sent.
    socket.once('connect', () => upstreamMeter.track(socket));
    const report = upstream?.onConnectFailure;
    if (report) reportConnectFailure(socket, report);
  };
  const upstreamHttpAgent = new WatchedHttpAgent(AGENT_OPTIONS, onUpstreamSocket);
  const upstreamHttpsAgent = new WatchedHttpsAgent(AGENT_OPTIONS, onUpstreamSocket);

  // Browser connections whose requests went through a SOCKS upstream, by proxy-chain's
  // connection id: their target bytes before the first such request (0 unless the upstream
  // was set while the connection was open), and whom to tell if it never reached the upstream.
  const socksConnections = new Map<number, { before: number; onConnectFailure?: () => void }>();
  let closedSocksBytes = 0;

  // host -> checked addresses, for the upstream proxy only (destinations are resolved per request).
  let upstreamResolved: { host: string; addresses: string[]; expires: number } | undefined;

  const refuse = (what: string, host: string, detail: string): never => {
    if (!refusedLogged.has(`${what} ${host}`) && refusedLogged.size < 1000) {
      refusedLogged.add(`${what} ${host}`);
      log.info({ host, refused: what }, 'traffic proxy refused a private address (private networks are not allowed)');
    }
    const subject = what === 'upstream' ? `the upstream proxy ${host}` : `the destination ${host}`;
    throw new RequestError(`Forbidden: ${subject} is a private address and the operator of this service has not allowed private networks.\n${detail}\n`, 403);
  };

  /** Resolves and checks `host`; returns the checked addresses. Throws RequestError. */
  const checkHost = async (what: 'destination' | 'upstream', host: string): Promise<string[]> => {
    const urlHost = net.isIPv6(host) ? `[${host}]` : host;
    try {
      const { addresses } = await assertPublicUrl(`http://${urlHost}/`, { allowPrivate: false });
      return addresses;
    } catch (err) {
      if (err instanceof UrlPolicyError) {
        if (err.reason === 'private_address') return refuse(what, host, err.message);
        if (err.reason === 'unresolvable') {
          throw new RequestError(`Bad Gateway: ${what === 'upstream' ? 'the upstream proxy ' : ''}${host} does not resolve.\n`, 502);
        }
        throw new RequestError(`Bad Request: ${err.message}\n`, 400);
      }
      throw err;
    }
  };

  const checkUpstream = async (up: ResolvedUpstream): Promise<string[]> => {
    const now = Date.now();
    if (upstreamResolved && upstreamResolved.host === up.host && upstreamResolved.expires > now) return upstreamResolved.addresses;
    const addresses = await checkHost('upstream', up.host);
    upstreamResolved = { host: up.host, addresses, expires: now + UPSTREAM_RESOLVE_TTL_MS };
    return addresses;
  };

  const prepareRequestFunction = async ({ hostname, connectionId }: PrepareRequestFunctionOpts): Promise<PrepareRequestFunctionResult> => {
    const host = stripBrackets(hostname);
    const up = upstream; // the setting at the time of the request
    if (up) {
      let dnsLookup: LookupFunction | undefined;
      let proxyUrl = up.proxyUrl;
      if (!allowPrivate && !up.operator) {
        const addresses = await checkUpstream(up);
        if (net.isIP(up.host) === 0) {
          // IPv4 first: proxy-chain hands the SOCKS client the URL's hostname, brackets and all.
          if (up.socks) proxyUrl = withAddress(proxyUrl, addresses.find((a) => net.isIPv4(a)) ?? addresses[0]);
          else dnsLookup = pinnedLookup(addresses);
        }
      }
      if (up.socks && !socksConnections.has(connectionId)) {
        socksConnections.set(connectionId, { before: targetBytes(server.getConnectionStats(connectionId)), onConnectFailure: up.onConnectFailure });
      }
      record(hostname);
      return { upstreamProxyUrl: proxyUrl, httpAgent: upstreamHttpAgent, httpsAgent: upstreamHttpsAgent, dnsLookup };
    }
    let dnsLookup: LookupFunction | undefined;
    if (!allowPrivate) {
      const addresses = await checkHost('destination', host);
      // IP literals never reach a lookup; they were checked as they are.
      dnsLookup = net.isIP(host) !== 0 ? undefined : pinnedLookup(addresses);
    }
    record(hostname);
    return { httpAgent: directAgent, dnsLookup };
  };

  const server = new Server({
    port: 0,
    host: LOOPBACK,
    prepareRequestFunction,
    verbose: false,
    authRealm: 'cloud-browser',
  });

  server.on('connectionClosed', ({ connectionId, stats }: { connectionId: number; stats?: ConnectionStats }) => {
    closedConnectionBytes += targetBytes(stats);
    const socks = socksConnections.get(connectionId);
    if (!socks) return;
    socksConnections.delete(connectionId);
    closedSocksBytes += targetBytes(stats) - socks.before;
    // proxy-chain counts a target only once the SOCKS handshake succeeded: none at all means
    // this connection never got through to the upstream. The owner checks before it acts (the
    // browser may have given up on the connection first).
    if (stats?.trgRxBytes == null) socks.onConnectFailure?.();
  });
  server.on('requestFailed', ({ error }: { error: Error }) => {
    log.warn({ err: { name: error?.name, message: redact(String(error?.message ?? error)) } }, 'traffic proxy request failed');
  });
  server.on('tunnelConnectFailed', ({ response }: { response?: http.IncomingMessage }) => {
    log.warn({ status: response?.statusCode }, 'upstream proxy refused a CONNECT tunnel');
  });

  // A long plain-HTTP upload must not be cut by Node's default 5-minute request timeout.
  server.server.requestTimeout = 0;

  await server.listen();
  const port = server.port;
  log = log.child({ port });
  log.debug({ upstream: upstream ? upstream.host : null, allowPrivate }, 'traffic proxy listening');

  let closing: Promise<void> | undefined;

  const stats = (): TrafficStats => {
    let networkBytes = closedConnectionBytes;
    for (const id of server.getConnectionIds()) networkBytes += targetBytes(server.getConnectionStats(id));
    let proxyBytes = upstreamMeter.total() + closedSocksBytes;
    for (const [id, socks] of socksConnections) proxyBytes += targetBytes(server.getConnectionStats(id)) - socks.before;
    return {
      // Everything through the upstream also crossed the network; the two counts are taken at
      // slightly different places, so keep them consistent.
      networkBytes: Math.max(networkBytes, proxyBytes),
      proxyBytes,
      requests,
      domains: [...domains].sort(),
    };
  };

  return {
    port,
    url: `http://${LOOPBACK}:${port}`,
    stats,
    setUpstream(next?: UpstreamProxy): void {
      upstream = next ? upstreamProxyUrl(next) : undefined;
      upstreamResolved = undefined;
      log.debug({ upstream: upstream ? upstream.host : null }, 'traffic proxy upstream set');
    },
    close(): Promise<void> {
      closing ??= (async () => {
        try {
          await server.close(true);
        } finally {
          directAgent.destroy();
          upstreamHttpAgent.destroy();
          upstreamHttpsAgent.destroy();
        }
        log.debug(stats(), 'traffic proxy closed');
      })();
      return closing;
    },
  };
}
