// Real Chromium, real Xvfb. Tests run one after another (two cores; at most two browsers
// at once here).
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CdpClient } from './cdp-client.js';
import { launchBrowser, type LaunchOptions, type RunningBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { MARKER_VARIABLE, isRunning, listPids } from './procfs.js';
import {
  chromiumPath,
  environOf,
  eventually,
  groupMembers,
  leftovers,
  listDir,
  ownerOf,
  tempBrowsersDir,
  testLog,
  xSocket,
  type FileIdentity,
} from './test-support.js';
import type { OwnerRecord } from './owner.js';

const log = testLog();
let browsersDir: string;
let site: Server;
let siteUrl: string;
let otherSite: Server;
let otherUrl: string;

const options = (o: Partial<LaunchOptions> = {}): LaunchOptions => ({ ...DEFAULT_LAUNCH_OPTIONS, ...o });
const launch = (name: string, o: Partial<LaunchOptions> = {}) => launchBrowser(options(o), { chromiumPath, rootDir: join(browsersDir, name), log });

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What a test takes of a browser while it runs, to check after close that all of it is gone. */
function whileRunning(browser: RunningBrowser): { owner: OwnerRecord; socket: FileIdentity | null } {
  return { owner: ownerOf(browser.rootDir), socket: browser.display ? xSocket(browser.display) : null };
}

/** Everything of the browser is gone: processes (group, Xvfb, crash handler), root, X files. */
function expectNothingLeft(browser: RunningBrowser, was: ReturnType<typeof whileRunning>) {
  expect(leftovers(was.owner)).toEqual([]);
  expect(groupMembers(browser.pid)).toEqual([]);
  expect(existsSync(browser.rootDir)).toBe(false);
  if (browser.display) {
    expect(was.socket).not.toBeNull();
    // Its socket is gone; one on the same number now is another Xvfb's.
    expect(xSocket(browser.display)).not.toEqual(was.socket);
    expect(existsSync(`/tmp/.X${browser.display.slice(1)}-lock`)).toBe(false);
  }
}

beforeAll(async () => {
  browsersDir = tempBrowsersDir();
  site = createServer((req, res) => {
    if (req.url?.startsWith('http://proxied.test/')) {
      // Chromium asks its proxy for absolute URLs: only a proxy sees this.
      res.writeHead(200, { 'content-type': 'text/html' }).end('<title>via proxy</title>');
    } else if (req.url === '/file') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-disposition': 'attachment; filename="report.bin"' });
      res.end('downloaded bytes');
    } else if (req.url === '/popup') {
      // window.open without a user gesture, as a page script: what popup blocking stops.
      res.writeHead(200, { 'content-type': 'text/html' }).end('<script>window.popupOpened = !!window.open("about:blank")</script>');
    } else {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<title>site</title><p>hello</p>');
    }
  });
  site.on('connect', (_req, socket) => socket.destroy()); // no HTTPS through the test proxy
  siteUrl = await listen(site);
  // Another origin without CORS headers.
  otherSite = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('secret'));
  otherUrl = await listen(otherSite);
});

afterAll(async () => {
  site?.close();
  otherSite?.close();
  rmSync(browsersDir, { recursive: true, force: true });
});

describe('launchBrowser', () => {
  it('starts headless Chromium in its own root with the asked viewport, and close() leaves nothing', async () => {
    process.env.CB_TEST_SERVER_SECRET = 'never-in-a-browser';
    const browser = await launch('session-a', { headless: true, viewport: { width: 1280, height: 720 } });
    delete process.env.CB_TEST_SERVER_SECRET;
    try {
      expect(browser.wsEndpoint).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/devtools\/browser\/[\w-]+$/);
      expect(browser.display).toBeUndefined();
      expect(browser.rootDir).toBe(join(browsersDir, 'session-a'));
      // adblock/: the ad-block extension's own copy (on by default; Chromium indexes its rules in there).
      expect(listDir(browser.rootDir).sort()).toEqual(['downloads', 'home', 'owner.json', 'tmp', 'uploads', 'user-data']);

      const owner = ownerOf(browser.rootDir);
      expect(owner.pids).toEqual([browser.pid]);
      expect(owner.pgids).toEqual([browser.pid]);
      expect(owner.serverPid).toBe(process.pid);
      expect(owner.sessionId).toBe('session-a');
      expect(Date.parse(owner.startedAt)).toBeGreaterThan(Date.now() - 60_000);

      // Its own group, TMPDIR in the root, the marker, and none of the server's secrets.
      expect(groupMembers(browser.pid).length).toBeGreaterThan(1);
      expect(environOf(browser.pid, 'TMPDIR')).toBe(join(browser.rootDir, 'tmp'));
      expect(environOf(browser.pid, MARKER_VARIABLE)).toBe(owner.marker);
      expect(environOf(browser.pid, 'CB_TEST_SERVER_SECRET')).toBeUndefined();

      const pw = await chromium.connectOverCDP(browser.wsEndpoint);
      const context = pw.contexts()[0]!;
      const first = context.pages()[0]!;
      expect(await first.evaluate(() => [innerWidth, innerHeight])).toEqual([1280, 720]);
      // Driven over CDP, headless, and still not flagged as automated.
      expect(await first.evaluate(() => navigator.webdriver)).toBe(false);
      const page = await context.newPage();
      expect(await page.evaluate(() => [innerWidth, innerHeight])).toEqual([1280, 720]);
      // Chromium's defaults hold: popups blocked, cross-origin reads refused.
      await page.goto(`${siteUrl}/popup`);
      expect(await page.evaluate(() => (window as any).popupOpened)).toBe(false);
      expect(
        await page.evaluate(
          (url) =>
            fetch(url).then(
              () => 'read',
              () => 'refused',
            ),
          otherUrl,
        ),
      ).toBe('refused');
      // A new context opens a window of its own: no browser-UI pages come with it (the
      // omnibox's preloaded WebUI popups cost every window a renderer of its own).
      const isolated = await pw.newContext();
      await (await isolated.newPage()).goto(`${siteUrl}/`);
      const cdp = await pw.newBrowserCDPSession();
      const { targetInfos } = await cdp.send('Target.getTargets');
      expect(targetInfos.filter((t) => t.type !== 'page').map((t) => `${t.type} ${t.url}`)).toEqual([]);
      expect(targetInfos.map((t) => t.url)).toContain(`${siteUrl}/`);
      await pw.close();

      const closing = browser.close();
      expect(browser.close()).toBe(closing); // idempotent
      await closing;
      expectNothingLeft(browser, { owner, socket: null });
      expect(await browser.exited).toEqual({ code: null, signal: 'SIGKILL' }); // the profile is thrown away: no graceful close
    } finally {
      await browser.close();
    }
  });

  it('gives each headful browser its own Xvfb display and the asked viewport, windowed or fullscreen', async () => {
    const [windowed, fullscreen] = await Promise.all([
      launch('headful-windowed', { viewport: { width: 1440, height: 900 } }),
      launch('headful-fullscreen', { viewport: { width: 1024, height: 768 }, fullscreen: true }),
    ]);
    try {
      expect(windowed.display).toMatch(/^:\d+$/);
      expect(fullscreen.display).toMatch(/^:\d+$/);
      expect(windowed.display).not.toBe(fullscreen.display);
      for (const b of [windowed, fullscreen]) {
        expect(environOf(b.pid, 'DISPLAY')).toBe(b.display);
        const owner = ownerOf(b.rootDir);
        expect(owner.pids).toHaveLength(2);
        expect(owner.pids[0]).toBe(b.pid);
        const xvfbPid = owner.pids[1]!;
        expect(readFileSync(`/proc/${xvfbPid}/cmdline`, 'latin1')).toContain('Xvfb');
        expect(xSocket(b.display!)).not.toBeNull();
      }

      const measure = async (b: RunningBrowser) => {
        const pw = await chromium.connectOverCDP(b.wsEndpoint);
        const page = pw.contexts()[0]!.pages()[0]!;
        const m = await page.evaluate(() => ({ inner: [innerWidth, innerHeight], screen: [screen.width, screen.height] }));
        const fresh = await pw.contexts()[0]!.newPage();
        const freshInner = await fresh.evaluate(() => [innerWidth, innerHeight]);
        await fresh.close();
        await pw.close();
        return { ...m, freshInner };
      };
      const w = await measure(windowed);
      expect(w.inner).toEqual([1440, 900]);
      expect(w.freshInner).toEqual([1440, 900]);
      // A normal window: tab strip and toolbar above the page, on a screen that fits it.
      expect(windowed.geometry.content.y).toBeGreaterThan(0);
      expect(w.screen).toEqual([windowed.geometry.screen.width, windowed.geometry.screen.height]);

      const f = await measure(fullscreen);
      expect(f.inner).toEqual([1024, 768]);
      expect(f.freshInner).toEqual([1024, 768]);
      expect(fullscreen.geometry.content).toEqual({ x: 0, y: 0, width: 1024, height: 768 });
      expect(log.warnings).not.toContain('fullscreen page differs from the request');
    } finally {
      const was = [whileRunning(windowed), whileRunning(fullscreen)] as const;
      await Promise.all([windowed.close(), fullscreen.close()]);
      expectNothingLeft(windowed, was[0]);
      expectNothingLeft(fullscreen, was[1]);
    }
  });

  it("starts a headful browser's GPU process once, on SwiftShader, and WebGL works", async () => {
    // Every GPU process of this browser (its cmdline names the root) seen from before the
    // launch until a WebGL page has drawn: one that fails its start lives ~0.3 s, so a look
    // every 20 ms sees each one.
    const rootDir = join(browsersDir, 'headful-gpu');
    const gpuPids = new Set<number>();
    const look = () => {
      for (const pid of listPids()) {
        let cmdline: string;
        try {
          cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
        } catch {
          continue; // ended since the listing
        }
        if (cmdline.includes('--type=gpu-process') && cmdline.includes(rootDir)) gpuPids.add(pid);
      }
    };
    const looking = setInterval(look, 20);
    const b = await launch('headful-gpu').finally(look);
    try {
      const pw = await chromium.connectOverCDP(b.wsEndpoint);
      const page = pw.contexts()[0]!.pages()[0]!;
      const renderer = await page.evaluate(() => {
        const gl = document.createElement('canvas').getContext('webgl');
        if (!gl) return 'no webgl';
        gl.getExtension('WEBGL_debug_renderer_info');
        return String(gl.getParameter(0x9246)); // UNMASKED_RENDERER_WEBGL
      });
      await page.screenshot();
      await pw.close();
      clearInterval(looking);
      look();
      expect(renderer).toContain('SwiftShader');
      // Left to find out that Xvfb has no GPU, Chromium 156 started three that failed first.
      expect(gpuPids.size).toBe(1);
    } finally {
      clearInterval(looking);
      const was = whileRunning(b);
      await b.close();
      expectNothingLeft(b, was);
    }
  });

  it('resolves exited when Chromium is SIGKILLed, and close() still cleans up (Xvfb included)', async () => {
    const browser = await launch('crashing', { viewport: { width: 800, height: 600 } });
    const was = whileRunning(browser);
    const xvfbPid = was.owner.pids[1]!;
    process.kill(browser.pid, 'SIGKILL');
    expect(await browser.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // Xvfb (-terminate) may already be exiting with its last client gone: close() ends it either way.
    await browser.close();
    expectNothingLeft(browser, was);
    expect(isRunning(xvfbPid)).toBe(false);
  });

  it('ends a browser that does not answer at all (a stopped process) at once', async () => {
    const browser = await launch('frozen', { headless: true });
    const was = whileRunning(browser);
    process.kill(browser.pid, 'SIGSTOP'); // a hung browser process: no CDP, no exit
    const started = Date.now();
    await browser.close();
    expect(Date.now() - started).toBeLessThan(3_000); // no graceful wait to time out
    expect((await browser.exited).signal).toBe('SIGKILL');
    expectNothingLeft(browser, was);
  });

  it('saves downloads in rootDir/downloads', async () => {
    const browser = await launch('downloads', { headless: true });
    try {
      // A bare CDP client: Playwright would set its own download directory.
      const cdp = await CdpClient.connect(browser.wsEndpoint);
      await cdp.send('Target.createTarget', { url: `${siteUrl}/file` });
      const file = join(browser.rootDir, 'downloads', 'report.bin');
      await eventually(() => existsSync(file) && readFileSync(file, 'utf8') === 'downloaded bytes', 10_000, 'the download');
      cdp.close();
    } finally {
      await browser.close();
    }
  });

  it('applies the options: web security off, popups allowed, proxy, extensions, a saved profile filled in by prepare', async () => {
    const extension = join(browsersDir, 'extension');
    mkdirSync(extension);
    writeFileSync(
      join(extension, 'manifest.json'),
      JSON.stringify({
        manifest_version: 3,
        name: 'test extension',
        version: '1.0',
        content_scripts: [{ matches: ['<all_urls>'], js: ['content.js'], run_at: 'document_end' }],
      }),
    );
    writeFileSync(join(extension, 'content.js'), 'document.documentElement.dataset.extension = "loaded";');
    // A profile as another browser left it, lock links included, written in by prepare.
    const prepare = async (root: string) => {
      const userData = join(root, 'user-data');
      mkdirSync(join(userData, 'Default'), { recursive: true });
      writeFileSync(join(userData, 'profile-marker'), 'from the profile');
      writeFileSync(join(userData, 'Default', 'Preferences'), JSON.stringify({ download: { default_directory: '/elsewhere' } }));
      symlinkSync('another-host-12345', join(userData, 'SingletonLock'));
      return { userData: true };
    };
    const browser = await launchBrowser(
      options({ headless: true, disableWebSecurity: true, popupBlocker: false, proxy: { server: siteUrl.replace('http://', '') }, extensionDirs: [extension] }),
      { chromiumPath, rootDir: join(browsersDir, 'options'), log, prepare },
    );
    try {
      const userData = join(browser.rootDir, 'user-data');
      expect(readFileSync(join(userData, 'profile-marker'), 'utf8')).toBe('from the profile');
      // This launch's download folder replaced the saved one, and the lock link of the
      // other host is gone (Chromium made its own).
      const prefs = JSON.parse(readFileSync(join(userData, 'Default', 'Preferences'), 'utf8'));
      expect(prefs.download.default_directory).toBe(join(browser.rootDir, 'downloads'));
      expect(readlinkSync(join(userData, 'SingletonLock'))).not.toBe('another-host-12345');
      const pw = await chromium.connectOverCDP(browser.wsEndpoint);
      const page = await pw.contexts()[0]!.newPage();

      await page.goto(`${siteUrl}/popup`);
      expect(await page.evaluate(() => (window as any).popupOpened)).toBe(true);
      expect(
        await page.evaluate(
          (url) =>
            fetch(url).then(
              (r) => r.text(),
              () => 'refused',
            ),
          otherUrl,
        ),
      ).toBe('secret');
      await page.waitForFunction(() => document.documentElement.dataset.extension === 'loaded', undefined, { timeout: 10_000 });

      await page.goto('http://proxied.test/');
      expect(await page.title()).toBe('via proxy');
      await pw.close();
    } finally {
      await browser.close();
    }
  });

  it('fails with a clear error when Chromium never reports DevTools, and leaves nothing', async () => {
    // Where the fake browser, under a uid of its own when the tests run as root, may write.
    const spot = mkdtempSync(join(tmpdir(), 'cb-silent-'));
    chmodSync(spot, 0o777);
    const pidsFile = join(spot, 'silent.pids');
    const fake = join(browsersDir, 'silent-chromium.sh');
    // A "browser" that forks a child and then says nothing.
    writeFileSync(fake, `#!/bin/sh\nsleep 300 &\necho "$$ $!" > ${pidsFile}\nwait\n`);
    chmodSync(fake, 0o755);
    const rootDir = join(browsersDir, 'silent');
    const started = Date.now();
    await expect(launchBrowser(options({ headless: true, fullscreen: true }), { chromiumPath: fake, rootDir, log, startTimeoutMs: 2_000 })).rejects.toThrow(
      'Chromium did not report its DevTools endpoint within 2 s',
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    const pids = readFileSync(pidsFile, 'utf8').trim().split(' ').map(Number);
    expect(pids).toHaveLength(2);
    for (const pid of pids) expect(isRunning(pid)).toBe(false);
    expect(existsSync(rootDir)).toBe(false);
    rmSync(spot, { recursive: true, force: true });
  });

  it("fails with Chromium's own words when it exits at start, and leaves nothing", async () => {
    const fake = join(browsersDir, 'failing-chromium.sh');
    writeFileSync(fake, '#!/bin/sh\necho "cannot open display: bad flag" >&2\nexit 3\n');
    chmodSync(fake, 0o755);
    const rootDir = join(browsersDir, 'failing');
    const err = await launchBrowser(options({ headless: true, fullscreen: true }), { chromiumPath: fake, rootDir, log }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('code 3');
    expect((err as Error).message).toContain('cannot open display: bad flag');
    expect(existsSync(rootDir)).toBe(false);
  });

  it('refuses a root that already exists', async () => {
    mkdirSync(join(browsersDir, 'taken'));
    await expect(launch('taken', { headless: true })).rejects.toThrow(/EEXIST/);
    expect(existsSync(join(browsersDir, 'taken'))).toBe(true);
  });
});
