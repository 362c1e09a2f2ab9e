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
import type { LookupAddress, lookup as dnsLookupFn } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { RequestError, Server, type ConnectionStats, type PrepareRequestFunctionOpts, type PrepareRequestFunctionResult } from 'proxy-chain';
import { assertPublicUrl, UrlPolicyError } from './address-policy.js';

export interface UpstreamProxy {
  /** http://, https:// or socks5:// host and port, credentials allowed in it. */
  server: string;
  username?: string;
  password?: string;
  /**
   * Configured by the operator (the service proxy pool), not by a user: its address is not
   * held to the private-network policy, which protects the operator from users' requests.
   */
  operator?: boolean;
  /** Told when a connection to the upstream cannot be made (refused, unreachable, TLS or SOCKS handshake failed). */
  onConnectFailure?: () => void;
}

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

interface ResolvedUpstream {
  /** Handed to proxy-chain; carries the credentials. Never log it. */
  proxyUrl: string;
  /** host without brackets, for policy checks and log lines */
  host: string;
  socks: boolean;
  operator: boolean;
  onConnectFailure?: () => void;
}

type LookupFunction = typeof dnsLookupFn;

const LOOPBACK = '127.0.0.1';
/** Bound on the recorded domain set (a page can invent hostnames without end). */
const MAX_DOMAINS = 10_000;
/** How long a checked upstream address list is reused. */
const UPSTREAM_RESOLVE_TTL_MS = 30_000;

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** The hostname as recorded in the domain list: lower case, no brackets, no trailing dot. */
function domainOf(hostname: string): string {
  return stripBrackets(hostname).toLowerCase().replace(/\.$/, '');
}

/** Removes anything that looks like credentials in a URL from a message before it is logged. */
function redact(text: string): string {
  return text.replace(/\/\/[^\s/@"']*@/g, '//[redacted]@');
}

/** The SOCKS proxy's port when its URL names none. */
const SOCKS_DEFAULT_PORT = '1080';

/**
 * Validates an upstream setting and builds the URL proxy-chain wants
 * (http://user:pass@host:port, credentials percent-encoded). A socks5 upstream is handed over
 * as socks5h: the upstream resolves destination names, as an HTTP upstream does (the exit's
 * DNS answers, and nothing resolved here that the policy did not check). Throws on a bad
 * setting; the message never contains the password.
 */
export function upstreamProxyUrl(upstream: UpstreamProxy): ResolvedUpstream {
  let url: URL;
  try {
    url = new URL(upstream.server);
  } catch {
    throw new TypeError('upstream proxy server must be an absolute URL such as http://host:port');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'socks5:') {
    throw new TypeError(`upstream proxy server must use http, https or socks5, not ${url.protocol.replace(/:$/, '')}`);
  }
  const socks = url.protocol === 'socks5:';
  const host = stripBrackets(url.hostname);
  if (host === '') throw new TypeError('upstream proxy server has no host');
  const out = socks ? new URL(`socks5h://${url.hostname}:${url.port || SOCKS_DEFAULT_PORT}`) : new URL(`${url.protocol}//${url.host}`);
  if (upstream.username !== undefined || upstream.password !== undefined) {
    const username = upstream.username ?? '';
    if (username.includes(':')) throw new TypeError('upstream proxy username must not contain ":" (Basic authentication)');
    out.username = encodeURIComponent(username);
    out.password = encodeURIComponent(upstream.password ?? '');
  } else if (url.username || url.password) {
    // Credentials given inside the server URL; already percent-encoded there.
    out.username = url.username;
    out.password = url.password;
  }
  return { proxyUrl: out.href, host, socks, operator: upstream.operator ?? false, onConnectFailure: upstream.onConnectFailure };
}

/** The proxy URL with its host replaced by a checked address (SOCKS connects resolve names themselves, past any lookup we give). */
function withAddress(proxyUrl: string, address: string): string {
  const u = new URL(proxyUrl);
  u.hostname = net.isIPv6(address) ? `[${address}]` : address;
  return u.href;
}

/**
 * A `lookup` that answers with addresses already resolved and checked, whatever name it is
 * asked about: the connection goes to exactly what the policy saw.
 */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const list: LookupAddress[] = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
  const fn = (
    hostname: string,
    options: unknown,
    callback?: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    let opts: { family?: number | string; all?: boolean } = {};
    let cb = callback;
    if (typeof options === 'function') cb = options as typeof callback;
    else if (typeof options === 'number') opts = { family: options };
    else if (typeof options === 'object' && options !== null) opts = options as typeof opts;
    const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : typeof opts.family === 'number' ? opts.family : 0;
    const matches = family === 4 || family === 6 ? list.filter((a) => a.family === family) : list;
    process.nextTick(() => {
      if (!cb) return;
      if (matches.length === 0) {
        const err: NodeJS.ErrnoException = new Error(`host ${hostname} has no usable checked address`);
        err.code = 'ENOTFOUND';
        cb(err, opts.all ? [] : '', undefined);
      } else if (opts.all) {
        cb(
          null,
          matches.map((a) => ({ ...a })),
        );
      } else {
        cb(null, matches[0].address, matches[0].family);
      }
    });
  };
  return fn as unknown as LookupFunction;
}

/** Keeps a running byte total over the sockets it is given, open ones included. */
class SocketMeter {
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

type OnSocket = (socket: net.Socket) => void;

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
class WatchedHttpAgent extends http.Agent {
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

class WatchedHttpsAgent extends https.Agent {
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
function reportConnectFailure(socket: net.Socket, report: () => void): void {
  let connected = false;
  socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => {
    connected = true;
  });
  socket.once('error', () => {
    if (!connected) report();
  });
}

const AGENT_OPTIONS: http.AgentOptions = { keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 32, scheduling: 'lifo', timeout: 60_000 };

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
