// An upstream proxy a session's traffic is chained to (traffic-proxy.ts): the setting as
// given, checked and turned into the URL proxy-chain takes, apart from the proxy so that a
// session's creation can refuse a bad setting before any browser starts.
import net from 'node:net';

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

/** An upstream setting checked (upstreamProxyUrl). */
export interface ResolvedUpstream {
  /** Handed to proxy-chain; carries the credentials. Never log it. */
  proxyUrl: string;
  /** host without brackets, for policy checks and log lines */
  host: string;
  socks: boolean;
  operator: boolean;
  onConnectFailure?: () => void;
}

/** A host as a URL names it, without the brackets of an IPv6 address. */
export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
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
export function withAddress(proxyUrl: string, address: string): string {
  const u = new URL(proxyUrl);
  u.hostname = net.isIPv6(address) ? `[${address}]` : address;
  return u.href;
}
