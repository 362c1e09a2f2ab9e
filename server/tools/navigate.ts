// The navigation of a tool's page: goto, raced against the main document being found to be a
// file (spotted or captured); a failed navigation as the error the tools answer.
import type { Page } from 'playwright-core';
import type { Config } from '../config/config.js';
import { assertPublicUrl, urlHost, UrlPolicyError } from '../net/address-policy.js';
import type { FileResult } from './files.js';
import type { Found, MainDocument, Spotted } from './main-document.js';
import { ToolError } from './tool-error.js';
import { upstreamFailure } from './upstream-failure.js';

export type WaitUntil = 'load' | 'domcontentloaded' | 'networkidle';

/** What a navigation reads of the configuration (when it needs it). */
export type NavigateConfig = Pick<Config, 'allowPrivateNetworks' | 'fetchProxyUrl' | 'fetchTimeoutSeconds'>;

/** Navigates; answers what it found when the main document is not a page. */
export async function navigate(
  page: Page,
  main: MainDocument,
  url: URL,
  deadline: number,
  waitUntil: 'commit' | WaitUntil,
  config: NavigateConfig,
): Promise<Found | undefined> {
  const nav = page
    .goto(url.href, { waitUntil: waitUntil === 'networkidle' ? 'load' : waitUntil, timeout: Math.max(1, deadline - Date.now()) })
    .then(() => undefined);
  const found = Promise.race([main.captured.then((file): Found => ({ file })), main.spottedFile.then((at): Found => ({ at }))]);
  const first = await Promise.race([
    found.then((f) => ({ f })),
    nav.then(
      () => ({ f: undefined }),
      (err: Error) => ({ err }),
    ),
  ]);
  if ('f' in first && first.f) {
    // Settled (committed, or aborted by the capture) before anyone closes the page: closing
    // a page whose navigation is still pending never returns. goto's timeout bounds this.
    await nav.catch(() => {});
    return first.f;
  }
  if ('err' in first) {
    // A file ends the navigation (the capture aborts it; a download is no page): that may be reported first.
    const f = await Promise.race([found, new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]);
    if (f) return f;
    throw await navigationError(first.err, main, url, deadline, config);
  }
  await main.settled();
  if (main.refusedPrivate)
    throw new ToolError(
      403,
      `Refused to fetch a private, loopback or link-local address: ${main.lastRequestUrl ? new URL(main.lastRequestUrl).host : url.host}`,
    );
  return main.found();
}

async function navigationError(err: Error, main: MainDocument, url: URL, deadline: number, config: NavigateConfig): Promise<ToolError> {
  const message = String(err.message ?? err);
  if (err.name === 'TimeoutError' || /Timeout \d+ms exceeded/.test(message) || Date.now() >= deadline) {
    return new ToolError(504, `Upstream timed out after ${config.fetchTimeoutSeconds} seconds`);
  }
  const target = main.lastRequestUrl ? new URL(main.lastRequestUrl) : url;
  if (main.refusedPrivate) return new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${target.host}`);
  if (/ERR_NAME_NOT_RESOLVED/.test(message)) return new ToolError(502, `getaddrinfo ENOTFOUND ${urlHost(target)}`);
  if (
    /ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY_CONNECTION_FAILED|ERR_ACCESS_DENIED|ERR_BLOCKED/.test(message) &&
    !config.allowPrivateNetworks &&
    !config.fetchProxyUrl
  ) {
    // The traffic proxy refuses private destinations (a redirect to one, say).
    try {
      await assertPublicUrl(target, { allowPrivate: false });
    } catch (e) {
      if (e instanceof UrlPolicyError && e.reason === 'private_address') {
        return new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${target.host}`);
      }
      if (e instanceof UrlPolicyError && e.reason === 'unresolvable') return new ToolError(502, `getaddrinfo ENOTFOUND ${urlHost(target)}`);
    }
  }
  const first = message
    .split('\n')[0]
    .replace(/^page\.goto:\s*/, '')
    .replace(/^Error:\s*/, '');
  return new ToolError(502, `Upstream error: ${first}`);
}

/** The file found, unless the main document was an upstream failure; or where a file is. */
export function foundFile(found: Found, main: MainDocument): FileResult | Spotted {
  if ('at' in found) return found;
  const failure = upstreamFailure(main.last);
  if (failure) throw failure;
  return found.file;
}
