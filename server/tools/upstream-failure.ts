// A main document that is an upstream failure, as the error the tools answer.
import { STATUS_TEXT, type MainResponse } from './main-document.js';
import { ToolError } from './tool-error.js';

/**
 * The error for a main document that is an upstream failure: a 5xx of the server, or one of
 * the 59x statuses the proxies (proxy-chain) answer for a connection they could not make.
 */
export function upstreamFailure(last: MainResponse | undefined): ToolError | undefined {
  if (!last || last.status < 500) return undefined;
  let host = '';
  try {
    host = new URL(last.url).host;
  } catch {
    // keep empty
  }
  switch (last.status) {
    case 593:
      return new ToolError(502, `getaddrinfo ENOTFOUND ${host.replace(/:\d+$/, '')}`);
    case 594:
      return new ToolError(502, `Upstream error: ${host} refused the connection`);
    case 595:
    case 596:
      return new ToolError(502, `Upstream error: ${host} reset the connection`);
    case 597:
      return new ToolError(502, 'Upstream error: the upstream proxy refused its credentials');
  }
  if (last.status >= 590 && last.status <= 599) return new ToolError(502, `Upstream error: the connection to ${host} failed`);
  return new ToolError(502, `Upstream error: the server answered ${last.status} ${last.statusText || STATUS_TEXT[last.status] || ''}`.trim());
}
