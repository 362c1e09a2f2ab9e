// Why a session cannot be created as asked, in words for its 400: options this server
// cannot honour (a service proxy its pool cannot give among them), and an initial_url the
// address policy refuses.
import type { SessionOptions } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { assertPublicUrl, UrlPolicyError } from '../net/address-policy.js';
import type { ServiceProxyPool } from '../net/service-proxies.js';
import { upstreamProxyUrl } from '../net/upstream-proxy.js';
import type { SessionCreateBody } from './options.js';

/** The hosted vendor's options this server accepts turned off, and refuses turned on. */
const UNAVAILABLE = {
  p2p_download: 'peer-to-peer download capture is not available on this server; downloads are kept with the session',
  tracing: "Playwright tracing of sessions is not available on this server; use the recording, or your CDP client's own tracing",
  sensitive_data_mask: 'sensitive data masking is not available on this server',
  web_bot_auth: 'Web Bot Auth request signing is not available on this server',
} as const;

export async function refusal(
  session: SessionOptions,
  body: SessionCreateBody | undefined,
  o: { config: Pick<ServiceConfig, 'allowPrivateNetworks'>; serviceProxies: ServiceProxyPool },
): Promise<string | undefined> {
  for (const [option, why] of Object.entries(UNAVAILABLE)) {
    if (body?.browser?.[option as keyof typeof UNAVAILABLE]?.active) return `browser.${option}: ${why}`;
  }
  const skip = [body?.identity_skip_validation, body?.skip_profile_validation];
  if (skip[0] !== undefined && skip[1] !== undefined && skip[0] !== skip[1]) {
    return 'identity_skip_validation and skip_profile_validation are the same option and were given different values';
  }
  if (session.captchaSolver && !session.proxy) return 'Captcha solver requires an active proxy';
  if (session.proxy?.type === 'service_proxy') {
    const { country_code, region, city } = session.proxy;
    const why = o.serviceProxies.refusal({ country_code, region, city });
    if (why) return why;
  }
  if (session.proxy?.type === 'custom') {
    try {
      upstreamProxyUrl(session.proxy);
    } catch (err) {
      // The message names the scheme or the rule, never the password.
      return `session.proxy: ${(err as Error).message}`;
    }
  }
  if (body?.integrations?.length) return `Unknown integration: ${body.integrations[0].id}`;
  if (session.initialUrl) {
    try {
      await assertPublicUrl(session.initialUrl, { allowPrivate: o.config.allowPrivateNetworks });
    } catch (err) {
      if (err instanceof UrlPolicyError) return `session.initial_url refused: ${err.message}`;
      throw err;
    }
  }
  return undefined;
}
