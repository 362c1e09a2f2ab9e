// Where a session's traffic goes past its traffic proxy: the user's own proxy (custom), an
// upstream of the operator's pool (service_proxy), or nowhere (direct). A service proxy is
// picked when the session is created and kept until it ends, and the proxy's failed
// connects during the session are reported to the pool, which rests it for new sessions.
import type { SessionProxy } from '../capability/index.js';
import type { ServiceProxyPool } from '../net/service-proxies.js';
import type { UpstreamProxy } from '../net/upstream-proxy.js';

export type SessionUpstream =
  | { ok: true; upstream: UpstreamProxy | undefined; serviceProxyId: string | undefined }
  | { ok: false; status: 400 | 503; message: string; retryAfterSeconds?: number };

/** `prefer`: the pool entry to keep when it is healthy and matches (a profile's sticky IP). */
export async function sessionUpstream(proxy: SessionProxy | undefined, pool: ServiceProxyPool, prefer?: string): Promise<SessionUpstream> {
  if (!proxy) return { ok: true, upstream: undefined, serviceProxyId: undefined };
  if (proxy.type === 'custom') {
    return { ok: true, upstream: { server: proxy.server, username: proxy.username, password: proxy.password }, serviceProxyId: undefined };
  }
  const picked = await pool.pick({ country_code: proxy.country_code, region: proxy.region, city: proxy.city }, { prefer });
  if (!picked.ok) return picked;
  const { id, url } = picked.proxy;
  return { ok: true, upstream: { server: url, operator: true, onConnectFailure: () => pool.reportFailure(id) }, serviceProxyId: id };
}
