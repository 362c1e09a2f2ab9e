// The URL a tool is asked for, checked before any browser is involved: the scheme, the
// address policy, and DNS unless an upstream proxy resolves for us.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Config } from '../config/config.js';
import { assertPublicUrl, blockedRange, urlHost, UrlPolicyError } from '../net/address-policy.js';
import { ToolError } from './tool-error.js';

/** Scheme and address policy; DNS unless an upstream proxy resolves for us. Throws ToolError. */
export async function checkUrl(input: string, what: 'fetch' | 'load', config: Pick<Config, 'allowPrivateNetworks' | 'fetchProxyUrl'>): Promise<URL> {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new ToolError(400, `Invalid URL: ${input}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolError(400, `Only http and https URLs are supported: ${input}`);
  const host = urlHost(url);
  if (!host) throw new ToolError(400, `Invalid URL: ${input}`);
  const { allowPrivateNetworks, fetchProxyUrl } = config;
  const refused = (address: string) =>
    new ToolError(403, `Refused to ${what} a private, loopback or link-local address: ${address === host ? host : `${host} (${address})`}`);
  if (fetchProxyUrl) {
    // The upstream proxy resolves names; what can be checked here is an address literal.
    if (!allowPrivateNetworks && (isIP(host) ? blockedRange(host) !== null : /^localhost\.?$/i.test(host))) throw refused(host);
    return url;
  }
  if (!allowPrivateNetworks) {
    try {
      await assertPublicUrl(url, { allowPrivate: false });
    } catch (err) {
      if (err instanceof UrlPolicyError) {
        if (err.reason === 'private_address') throw refused(/resolves to (\S+),/.exec(err.message)?.[1] ?? host);
        if (err.reason === 'unresolvable') throw new ToolError(502, `getaddrinfo ENOTFOUND ${host}`);
        throw new ToolError(400, `Invalid URL: ${input}`);
      }
      throw err;
    }
  } else if (!isIP(host)) {
    try {
      await lookup(host, { all: true });
    } catch {
      throw new ToolError(502, `getaddrinfo ENOTFOUND ${host}`);
    }
  }
  return url;
}
