// A browser behind its own traffic proxy: every connection it makes (pages, redirects,
// subresources, WebSockets, loopback too) goes through the proxy, which meters the bytes
// and domains and refuses what the address policy refuses. Session and tool browsers are
// all launched this way.
import { startTrafficProxy, type TrafficProxy, type TrafficProxyOptions } from '../net/traffic-proxy.js';
import { launchBrowser, type LaunchEnv, type RunningBrowser } from './launch.js';
import type { LaunchOptions } from './launch-options.js';

export interface MeteredBrowser {
  browser: RunningBrowser;
  traffic: TrafficProxy;
}

export async function launchMeteredBrowser(options: Omit<LaunchOptions, 'proxy'>, env: LaunchEnv, traffic: TrafficProxyOptions): Promise<MeteredBrowser> {
  const proxy = await startTrafficProxy(traffic);
  try {
    // <-loopback> removes Chromium's implicit loopback bypass: the proxy decides.
    const browser = await launchBrowser({ ...options, proxy: { server: proxy.url, bypass: '<-loopback>' } }, env);
    return { browser, traffic: proxy };
  } catch (err) {
    await proxy.close();
    throw err;
  }
}

/** The browser first (it holds connections through the proxy), then its proxy. */
export async function closeMeteredBrowser(m: MeteredBrowser): Promise<void> {
  await m.browser.close();
  await m.traffic.close();
}
