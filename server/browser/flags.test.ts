import { describe, expect, it } from 'vitest';
import { chromiumArgs, geometry } from './flags.js';
import { DEFAULT_LAUNCH_OPTIONS, sameLaunchOptions, type LaunchOptions } from './launch-options.js';

const insets = { width: 0, height: 87 };
const base: LaunchOptions = { ...DEFAULT_LAUNCH_OPTIONS, viewport: { width: 1280, height: 720 } };
const args = (o: Partial<LaunchOptions> = {}, sandbox = true) => {
  const options = { ...base, ...o };
  return chromiumArgs(options, { userDataDir: '/r/user-data', geometry: geometry(options, insets), sandbox });
};

describe('chromiumArgs', () => {
  it('always has the flags this network and a fresh profile need', () => {
    const a = args();
    for (const flag of [
      '--remote-debugging-port=0',
      '--remote-debugging-pipe',
      '--disable-background-networking',
      '--disable-component-update',
      '--component-updater=url-source=http://127.0.0.1:9/',
      '--gaia-url=http://127.0.0.1:9/',
      '--no-first-run',
      '--disable-sync',
      '--disable-quic',
      '--no-default-browser-check',
      '--password-store=basic',
      '--use-mock-keychain',
      '--disable-dev-shm-usage',
      '--disable-blink-features=AutomationControlled',
      '--user-data-dir=/r/user-data',
    ]) {
      expect(a).toContain(flag);
    }
    expect(a.at(-1)).toBe('about:blank');
  });

  it('adds --no-sandbox only when the sandbox is off', () => {
    expect(args({}, false)).toContain('--no-sandbox');
    expect(args({}, true)).not.toContain('--no-sandbox');
  });

  it('keeps Chromium popup blocking unless popup_blocker is off', () => {
    expect(args()).not.toContain('--disable-popup-blocking');
    expect(args({ popupBlocker: false })).toContain('--disable-popup-blocking');
  });

  it('maps headless, fullscreen, web security, proxy and extensions', () => {
    expect(args({ headless: true })).toContain('--headless=new');
    expect(args({ headless: false })).not.toContain('--headless=new');
    expect(args({ headless: false })).toContain('--ozone-platform=x11');
    expect(args({ fullscreen: true })).toContain('--start-fullscreen');
    expect(args()).not.toContain('--start-fullscreen');
    expect(args({ disableWebSecurity: true })).toContain('--disable-web-security');
    expect(args()).not.toContain('--disable-web-security');
    const p = args({ proxy: { server: 'http://127.0.0.1:8080', bypass: '*.local' } });
    expect(p).toContain('--proxy-server=http://127.0.0.1:8080');
    expect(p).toContain('--proxy-bypass-list=*.local');
    expect(args().some((f) => f.startsWith('--proxy-server'))).toBe(false);
    const e = args({ extensionDirs: ['/e/one', '/e/two'] });
    expect(e).toContain('--load-extension=/e/one,/e/two');
    expect(e).toContain('--disable-extensions-except=/e/one,/e/two');
    expect(args().some((f) => f.startsWith('--load-extension'))).toBe(false);
  });

  it('sizes the window from the viewport plus the insets', () => {
    expect(args()).toContain('--window-size=1280,807');
    expect(args({ fullscreen: true })).toContain('--window-size=1280,720');
    expect(args({ headless: true })).toContain('--screen-info={1280x807}');
  });
});

describe('geometry', () => {
  it('gives a headful screen one pixel larger than the window (X11 shrinks a screen-sized window)', () => {
    expect(geometry(base, insets)).toEqual({
      window: { width: 1280, height: 807 },
      screen: { width: 1281, height: 808 },
      content: { x: 0, y: 87, width: 1280, height: 720 },
    });
  });

  it('puts the page at the screen origin in fullscreen', () => {
    expect(geometry({ ...base, fullscreen: true }, insets).content).toEqual({ x: 0, y: 0, width: 1280, height: 720 });
    expect(geometry({ ...base, fullscreen: true, headless: true }, insets).screen).toEqual({ width: 1280, height: 720 });
  });
});

describe('sameLaunchOptions', () => {
  it('compares every option', () => {
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, viewport: { width: 1440, height: 900 } })).toBe(true);
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, headless: true })).toBe(false);
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, viewport: { width: 1440, height: 901 } })).toBe(false);
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, extensionDirs: ['/x'] })).toBe(false);
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, extensionDirs: [] })).toBe(true);
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, proxy: { server: 'http://p:1' } })).toBe(false);
    expect(sameLaunchOptions(DEFAULT_LAUNCH_OPTIONS, { ...DEFAULT_LAUNCH_OPTIONS, adblock: false })).toBe(false);
  });
});
