// A session's configuration with every default filled in, from the create body. Launch
// options (what Chromium starts with) are split from session options (what the server
// does around it), because only the first decide whether a warm pooled browser fits.
import type { components } from '../../generated/types.js';
import { BUILT_IN_EXTENSIONS, DEFAULT_LAUNCH_OPTIONS, sameLaunchOptions, type LaunchOptions } from '../browser/index.js';
import type { SessionOptions } from '../capability/index.js';

export type { LaunchOptions };

export type SessionCreateBody = components['schemas']['SessionCreateRequest'];

const minutes = (value: number | undefined, fallback: number) => {
  const m = value ?? fallback;
  return m === -1 ? undefined : m * 60_000;
};

export function normalize(body: SessionCreateBody | undefined): { launch: LaunchOptions; session: SessionOptions } {
  const s = body?.session ?? {};
  const b = body?.browser ?? {};
  return {
    launch: {
      headless: b.headless?.active ?? DEFAULT_LAUNCH_OPTIONS.headless,
      viewport: {
        width: b.viewport?.width ?? DEFAULT_LAUNCH_OPTIONS.viewport.width,
        height: b.viewport?.height ?? DEFAULT_LAUNCH_OPTIONS.viewport.height,
      },
      fullscreen: b.fullscreen?.active ?? DEFAULT_LAUNCH_OPTIONS.fullscreen,
      disableWebSecurity: b.disable_web_security?.active ?? DEFAULT_LAUNCH_OPTIONS.disableWebSecurity,
      crossOriginSupport: b.cross_origin_support?.active ?? DEFAULT_LAUNCH_OPTIONS.crossOriginSupport,
      popupBlocker: b.popup_blocker?.active ?? DEFAULT_LAUNCH_OPTIONS.popupBlocker,
      pdfViewer: b.pdf_viewer?.active ?? DEFAULT_LAUNCH_OPTIONS.pdfViewer,
      adblock: b.adblock?.active ?? DEFAULT_LAUNCH_OPTIONS.adblock,
      extraStealth: b.extra_stealth?.active ?? DEFAULT_LAUNCH_OPTIONS.extraStealth,
      extensionDirs: [
        ...(b.disable_dialogs?.active ? [BUILT_IN_EXTENSIONS.noDialogs] : []),
        ...(b.force_popups_as_tabs?.active ? [BUILT_IN_EXTENSIONS.popupsAsTabs] : []),
      ],
    },
    session: {
      initialUrl: s.initial_url,
      tags: s.tags ?? [],
      recording: s.recording?.active ?? true,
      maxDurationMs: minutes(s.timeout?.max_duration, 20),
      idleTimeoutMs: minutes(s.timeout?.idle_timeout, 5),
      liveView: { readOnly: s.live_view?.read_only ?? false, oneTimeUrl: s.live_view?.one_time_url ?? false },
      proxy: !s.proxy?.active
        ? undefined
        : s.proxy.type === 'custom'
          ? { type: 'custom', server: s.proxy.server, username: s.proxy.username, password: s.proxy.password }
          : { type: 'service_proxy', country_code: s.proxy.country_code, region: s.proxy.region, city: s.proxy.city },
      captchaSolver: b.captcha_solver?.active ?? false,
      extensionIds: b.extensions ?? [],
      profile: b.profile ? { name: b.profile.name, persist: b.profile.persist ?? false } : undefined,
      identities: {
        // One login an identity, however often the body names it.
        ids: [...new Set((body?.identities ?? []).map((i) => i.id))],
        skipProfileValidation: body?.skip_profile_validation ?? body?.identity_skip_validation ?? true,
        inBackground: body?.authenticate_in_background ?? false,
      },
    },
  };
}

/**
 * Whether a warm browser (launched with the defaults) serves this session as well. Ad-block
 * off is served too: the warm browser's rules are turned off when the session takes it
 * (turnAdblockOff, ~80 ms), which is cheaper than a cold launch by about a second.
 */
export function fitsWarmPool(launch: LaunchOptions, session: SessionOptions): boolean {
  return (
    sameLaunchOptions({ ...launch, adblock: DEFAULT_LAUNCH_OPTIONS.adblock }, DEFAULT_LAUNCH_OPTIONS) && session.extensionIds.length === 0 && !session.profile
  );
}

/** The configuration as stored and answered: the body as given, minus secrets. */
export function storedConfiguration(body: SessionCreateBody | undefined): SessionCreateBody {
  const copy: SessionCreateBody = structuredClone(body ?? {});
  const proxy = copy.session?.proxy;
  if (proxy && proxy.type === 'custom') delete proxy.password;
  return copy;
}
