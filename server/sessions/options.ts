// A session's configuration with every default filled in, from the create body. Launch
// options (what Chromium starts with) are split from session options (what the server
// does around it), because only the first decide whether a warm pooled browser fits.
import type { components } from '../../generated/types.js';

export type SessionCreateBody = components['schemas']['SessionCreateRequest'];
type ProxyOptions = components['schemas']['ProxyOptions'];

export interface LaunchOptions {
  headless: boolean;
  viewport: { width: number; height: number };
  fullscreen: boolean;
  disableWebSecurity: boolean;
  popupBlocker: boolean;
  extensionIds: string[];
  profile: { name: string; persist: boolean } | undefined;
}

export interface SessionOptions {
  initialUrl: string | undefined;
  tags: string[];
  recording: boolean;
  /** Milliseconds; undefined when disabled (-1). */
  maxDurationMs: number | undefined;
  idleTimeoutMs: number | undefined;
  liveView: { readOnly: boolean; oneTimeUrl: boolean };
  proxy: ProxyOptions | undefined;
  captchaSolver: boolean;
  adblock: boolean;
}

export const defaultLaunch: LaunchOptions = {
  headless: false,
  viewport: { width: 1440, height: 900 },
  fullscreen: false,
  disableWebSecurity: false,
  popupBlocker: true,
  extensionIds: [],
  profile: undefined,
};

const minutes = (value: number | undefined, fallback: number) => {
  const m = value ?? fallback;
  return m === -1 ? undefined : m * 60_000;
};

export function normalize(body: SessionCreateBody | undefined): { launch: LaunchOptions; session: SessionOptions } {
  const s = body?.session ?? {};
  const b = body?.browser ?? {};
  return {
    launch: {
      headless: b.headless?.active ?? defaultLaunch.headless,
      viewport: {
        width: b.viewport?.width ?? defaultLaunch.viewport.width,
        height: b.viewport?.height ?? defaultLaunch.viewport.height,
      },
      fullscreen: b.fullscreen?.active ?? false,
      disableWebSecurity: b.disable_web_security?.active ?? false,
      popupBlocker: b.popup_blocker?.active ?? true,
      extensionIds: b.extensions ?? [],
      profile: b.profile ? { name: b.profile.name, persist: b.profile.persist ?? false } : undefined,
    },
    session: {
      initialUrl: s.initial_url,
      tags: s.tags ?? [],
      recording: s.recording?.active ?? true,
      maxDurationMs: minutes(s.timeout?.max_duration, 20),
      idleTimeoutMs: minutes(s.timeout?.idle_timeout, 5),
      liveView: { readOnly: s.live_view?.read_only ?? false, oneTimeUrl: s.live_view?.one_time_url ?? false },
      proxy: s.proxy?.active ? s.proxy : undefined,
      captchaSolver: b.captcha_solver?.active ?? false,
      adblock: b.adblock?.active ?? true,
    },
  };
}

/** Whether a browser launched with the defaults serves these options as well. */
export function fitsWarmPool(launch: LaunchOptions): boolean {
  return (
    launch.headless === defaultLaunch.headless &&
    launch.viewport.width === defaultLaunch.viewport.width &&
    launch.viewport.height === defaultLaunch.viewport.height &&
    !launch.fullscreen &&
    !launch.disableWebSecurity &&
    launch.popupBlocker &&
    launch.extensionIds.length === 0 &&
    launch.profile === undefined
  );
}

/** The configuration as stored and answered: the body as given, minus secrets. */
export function storedConfiguration(body: SessionCreateBody | undefined): SessionCreateBody {
  const copy: SessionCreateBody = structuredClone(body ?? {});
  const proxy = copy.session?.proxy;
  if (proxy && proxy.type === 'custom') delete proxy.password;
  return copy;
}
