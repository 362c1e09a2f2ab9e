// Starting one session's Chromium in its own temporary root, and ending it so that nothing
// is left: no Chromium process, no Xvfb, no directory.
//
// We spawn Chromium ourselves rather than through playwright's launch: we need the
// process (its group, to kill every child; its exit, to detect crashes), a browser that
// outlives any one CDP client, and no browser downloads. Clients then attach over CDP.
//
// Root layout (rootDir, created here, removed by close()):
//   owner.json   who launched what (sweep.ts reads it after a server crash)
//   user-data/   --user-data-dir (a saved profile is unpacked here by prepare)
//   downloads/   the download directory (profile preference)
//   uploads/     files given to the session (POST /v1/sessions/{id}/uploads), the only ones
//                a CDP client may hand a file input (local-files.ts)
//   tmp/         TMPDIR
//   home/        HOME and XDG dirs: NSS databases, crash reports, caches stay inside
//   adblock/     the ad-block extension's own copy (adblock.ts), when the options ask for it
//   stealth/     the extra_stealth extension (stealth-extension.ts), when asked for
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { installAdblock } from './adblock.js';
import { browserUid, ensureXSocketDir, handOver, openForSearch } from './browser-user.js';
import { BrowserGroup, spawnIn, type BrowserLimits, type CgroupPlace } from './cgroup.js';
import { toBackground, toForeground } from './cpu-priority.js';
import type { AutoSelectCertificate } from './auto-select-certificates.js';
import { installStealth } from './stealth-extension.js';
import { CdpClient } from './cdp-client.js';
import { downloadsDirOf } from './download-path.js';
import { chromiumArgs, geometry, type Geometry, type WindowInsets } from './flags.js';
import { DEFAULT_LAUNCH_OPTIONS, type LaunchOptions } from './launch-options.js';
import { removeLocks, writeProfilePreferences } from './profile-files.js';
import type { Log } from './log.js';
import { newOwnerRecord, readOwner, writeOwner, type OwnerRecord } from './owner.js';
import { MARKER_VARIABLE, killRootProcesses, killRootProcessesOnce, within, type RootIdentity } from './procfs.js';
import { holdFrozen, letGo } from './reaper.js';
import { startXvfb, type RunningXvfb } from './xvfb.js';
import { lastLines, waitForDevTools } from './chromium-stderr.js';
import { firstPage, fitViewport, holdFullscreen, measureSettled } from './window-fit.js';

export type { LaunchOptions } from './launch-options.js';

export interface LaunchEnv {
  chromiumPath: string;
  /** The session's temporary root; must not exist yet (its parent is created if needed). */
  rootDir: string;
  log: Log;
  /** Recorded in owner.json; defaults to basename(rootDir); null for a pooled browser. */
  sessionId?: string | null;
  /** How long Chromium may take to print its DevTools endpoint (default 30 s). */
  startTimeoutMs?: number;
  /** Default: Xvfb from PATH. */
  xvfbPath?: string;
  /** Aborts a launch in progress (the session was deleted, the server is stopping). */
  signal?: AbortSignal;
  /**
   * Fills the new root before Chromium starts (the session's extensions, a saved profile in
   * user-data/), and says what that adds to the launch. The root is the launcher's, with its owner
   * record, so whatever this writes goes with it on every end path.
   */
  prepare?(rootDir: string): Promise<RootAddition | undefined>;
  /** Started at a low CPU weight (the warm pool's refills): its group's, or its autogroup's without one (cpu-priority.ts). */
  background?: boolean;
  /** Caps the browser (and its Xvfb) in control groups of its own below `place` (cgroup.ts). */
  cgroup?: { place: CgroupPlace; limits: BrowserLimits };
  /** false: Chromium without its sandbox, as the server (the operator's BROWSER_SANDBOX=off); default true (browser-user.ts). */
  sandbox?: boolean;
}

/** What a root's preparation adds to the launch. */
export interface RootAddition extends Pick<LaunchOptions, 'extensionDirs'> {
  /**
   * user-data/ was filled (a saved profile): another browser's lock files are removed (its
   * bookmarks bar, which would take height from the page, is hidden like every browser's).
   */
  userData?: boolean;
  /** Client certificates the root's NSS database (home/.pki/nssdb) holds, and the origins each is presented to. */
  autoSelectCertificates?: AutoSelectCertificate[];
}

export interface BrowserExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningBrowser {
  /** The browser-level CDP endpoint: ws://127.0.0.1:PORT/devtools/browser/GUID. */
  wsEndpoint: string;
  /** Chromium's pid, also its process group id. */
  pid: number;
  /** ":N" for headful browsers (their private Xvfb). */
  display?: string;
  rootDir: string;
  /** Window, screen and page rectangle, in screen pixels (the window sits at 0,0). */
  geometry: Geometry;
  /**
   * The --remote-debugging-pipe: CDP as JSON messages ending in a NUL byte, for one
   * client in this process (the tool browsers' Playwright; a WebSocket would cost it
   * compression of every message). Unread, it is drained.
   */
  pipe: { input: NodeJS.WritableStream; output: NodeJS.ReadableStream };
  /** Records the session this browser now serves in owner.json (pooled browsers). */
  adopt(sessionId: string): void;
  /**
   * SIGKILL of the process group, Xvfb's stop and rm -rf rootDir. Idempotent; never
   * rejects. Call it after `exited` too (a crash): it is what stops Xvfb and removes the
   * root.
   */
  close(): Promise<void>;
  /**
   * SIGSTOP of the process group: it does nothing more (no page script, no request, no
   * CPU) until close() kills it. For an end that records the session now and tears the
   * browser down a moment later (a task run's, after its outcome). Never throws.
   */
  freeze(): void;
  /** Resolves when the Chromium process exits, for any reason. */
  exited: Promise<BrowserExit>;
  /** Its control groups, with LaunchEnv.cgroup: its caps, and what hit them. */
  group?: BrowserGroup;
  /** Its ordinary CPU weight back, after LaunchEnv.background: its group's, or its autogroup's. */
  foreground(): void;
}

/** The folders of a root (see the layout above), for those that fill or read it. */
export function rootPaths(rootDir: string): { userData: string; downloads: string; uploads: string; tmp: string; home: string } {
  return {
    userData: join(rootDir, 'user-data'),
    downloads: downloadsDirOf(rootDir),
    uploads: join(rootDir, 'uploads'),
    tmp: join(rootDir, 'tmp'),
    home: join(rootDir, 'home'),
  };
}

const KILL_WAIT_MS = 5_000;

/** Browsers of this process that are not closed yet, killed if the process exits. */
const live = new Set<RootIdentity>();
let exitHookInstalled = false;
function track(identity: RootIdentity): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // Last resort when the server exits without closing its browsers (an uncaught
    // exception, process.exit): 'exit' handlers must be synchronous, so kill only; the
    // roots are removed by the sweep at the next start (their owner is gone).
    process.on('exit', () => {
      for (const identity of live) killRootProcessesOnce(identity);
    });
  }
  live.add(identity);
}

export async function launchBrowser(options: LaunchOptions, env: LaunchEnv): Promise<RunningBrowser> {
  const rootDir = resolve(env.rootDir);
  const insets = options.fullscreen ? { width: 0, height: 0 } : await windowInsets(options.headless, { ...env, rootDir });
  return start(options, { ...env, rootDir }, insets);
}

/** Builds the environment Chromium and Xvfb run with. */
function processEnv(rootDir: string, marker: string): NodeJS.ProcessEnv {
  const home = join(rootDir, 'home');
  // Not the server's environment: it holds database URLs and API keys that a browser
  // (and any extension or exploited renderer in it) has no business seeing.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    TMPDIR: join(rootDir, 'tmp'),
    [MARKER_VARIABLE]: marker,
  };
  // Locale and time zone decide the browser's language and Date(): keep the operator's.
  for (const name of ['LANG', 'LANGUAGE', 'LC_ALL', 'TZ']) {
    if (process.env[name]) env[name] = process.env[name];
  }
  return env;
}

async function start(options: LaunchOptions, env: LaunchEnv & { rootDir: string }, insets: WindowInsets): Promise<RunningBrowser> {
  const { rootDir, log } = env;
  const marker = randomUUID();
  const identity: RootIdentity = { marker, rootDir };
  const paths = rootPaths(rootDir);
  const sandbox = env.sandbox ?? true;
  const uid = browserUid(sandbox);
  await mkdir(dirname(rootDir), { recursive: true });
  if (uid !== undefined) await openForSearch(dirname(rootDir));
  // Not recursive: an existing root belongs to someone (another session, a sweep to come).
  await mkdir(rootDir);
  // owner.json before any process exists, so a crash at any later point is swept.
  const owner: OwnerRecord = newOwnerRecord(rootDir, marker, env.sessionId === undefined ? basename(rootDir) : env.sessionId);
  if (env.cgroup) owner.cgroups = BrowserGroup.dirsOf(env.cgroup.place, basename(rootDir));
  writeOwner(rootDir, owner);
  track(identity);

  let group: BrowserGroup | undefined;
  let xvfb: RunningXvfb | undefined;
  let child: ChildProcess | undefined;
  let stderrTail = '';
  const cleanup = async () => {
    // Only while not reaped: until then its pid (and group id) cannot be reused.
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await xvfb?.stop();
    await killRootProcesses(identity);
    group?.remove();
    await removeRoot(rootDir, log);
    live.delete(identity);
  };

  try {
    if (env.cgroup) group = BrowserGroup.make(env.cgroup.place, basename(rootDir), env.cgroup.limits, env.background ?? false);
    await Promise.all(Object.values(paths).map((p) => mkdir(p, { recursive: true })));
    // Before the preferences: a saved profile unpacked into user-data/ brings its own
    // Preferences, which this launch's download folder and exit state then overwrite. After every extension folder is known:
    // the preferences let each run in new browser contexts.
    const added = await env.prepare?.(rootDir);
    if (added?.extensionDirs?.length) options = { ...options, extensionDirs: [...(options.extensionDirs ?? []), ...added.extensionDirs] };
    if (added?.userData) await removeLocks(paths.userData);
    if (options.extraStealth) options = { ...options, extensionDirs: [...(options.extensionDirs ?? []), await installStealth(rootDir)] };
    const adblock = options.adblock ? await installAdblock(rootDir, options.extensionDirs ?? [], env) : undefined;
    if (adblock && 'dir' in adblock) options = { ...options, extensionDirs: [adblock.dir, ...(options.extensionDirs ?? [])] };
    await writeProfilePreferences(paths.userData, paths.downloads, options, added?.autoSelectCertificates ?? [], adblock);

    env.signal?.throwIfAborted();
    const geo = geometry(options, insets);
    const childEnv = processEnv(rootDir, marker);
    if (uid !== undefined) await handOver(rootDir, uid);
    if (!options.headless) {
      if (uid !== undefined) ensureXSocketDir();
      xvfb = await startXvfb({
        uid,
        group,
        xvfbPath: env.xvfbPath ?? 'Xvfb',
        width: geo.screen.width,
        height: geo.screen.height,
        env: childEnv,
        log,
      });
      childEnv.DISPLAY = xvfb.display;
    }

    env.signal?.throwIfAborted();
    const args = chromiumArgs(options, {
      userDataDir: paths.userData,
      geometry: geo,
      sandbox,
    });
    // detached: Chromium leads a new process group, so one kill(-pgid) reaches the
    // zygotes, renderers, GPU and utility processes it forks. stdout is unused; stderr
    // carries the DevTools line and, later, diagnostics for a crash. Fds 3 and 4 are the
    // --remote-debugging-pipe: held open by this process only, they close when it dies
    // however it dies (kill -9 included), and Chromium exits then.
    const command = spawnIn(group, env.chromiumPath, args, uid);
    child = spawn(command.command, command.args, {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'],
      env: childEnv,
      ...(command.uid === undefined ? {} : { uid: command.uid, gid: command.uid }),
    });
    const spawned = child;
    (spawned.stdio[4] as NodeJS.ReadableStream).resume();
    // A write to a browser that died fails with EPIPE: its exit is reported through `exited`.
    (spawned.stdio[3] as NodeJS.WritableStream).on('error', () => {});
    const exited = new Promise<BrowserExit>((res) => spawned.once('exit', (code, signal) => res({ code, signal })));
    const spawnFailed = new Promise<never>((_, rej) => spawned.once('error', rej));
    spawnFailed.catch(() => {}); // observed below; never unhandled
    if (spawned.pid !== undefined) {
      if (env.background && !group) toBackground(spawned.pid);
      owner.pids = [spawned.pid, ...(xvfb ? [xvfb.pid] : [])];
      owner.pgids = [...owner.pids];
      if (xvfb) owner.display = xvfb.display;
      writeOwner(rootDir, owner);
    }
    // Keep draining stderr for the browser's whole life (a full pipe would block it), and
    // keep the end of it to explain a crash.
    spawned.stderr!.on('data', (chunk: Buffer) => {
      stderrTail = (stderrTail + chunk.toString()).slice(-4_000);
    });

    const timeoutMs = env.startTimeoutMs ?? 30_000;
    const abort = onAbort(env.signal);
    const wsEndpoint = await Promise.race([
      waitForDevTools(spawned, timeoutMs),
      abort.rejected,
      spawnFailed.catch((err: Error) => {
        throw new Error(`could not start Chromium (${env.chromiumPath}): ${err.message}`);
      }),
      exited.then(({ code, signal }) => {
        throw new Error(`Chromium exited (code ${code}, signal ${signal}) before DevTools was ready: ${lastLines(stderrTail)}`);
      }),
    ]).finally(abort.dispose);
    const pid = spawned.pid!;
    log.info({ pid, display: xvfb?.display, rootDir, wsEndpoint }, 'chromium started');

    // The session is handed over with its first tab open: clients take pages()[0].
    // Headful windows are placed by X, so there the page is measured and the window corrected until the page gets the viewport asked for
    // (see flags.ts geometry()). A headless window is exactly --window-size and its chrome
    // is the calibrated insets (launch.test.ts checks the viewport): measuring it again
    // would wait for the first tab's renderer: about 110 ms of every cold start, measured.
    const fit = !options.headless && (insets.width !== 0 || insets.height !== 0 || options.fullscreen);
    const cdp = await CdpClient.connect(wsEndpoint);
    try {
      if (!fit) await firstPage(cdp);
      else if (options.fullscreen) await holdFullscreen(cdp, options.viewport, log);
      else await fitViewport(cdp, options.viewport, log);
    } catch (err) {
      log.warn({ err: (err as Error).message, rootDir }, 'could not check the first tab');
    } finally {
      cdp.close();
    }

    let closing: Promise<void> | undefined;
    // Stopped: it no longer sees the DevTools pipe close if this process dies (reaper.ts).
    let frozen = false;
    // Node sets these when it reaps the child: until then its pid and group are ours.
    const hasExited = () => spawned.exitCode !== null || spawned.signalCode !== null;
    void exited.then((exit) => {
      if (closing) return;
      // Code 0: closed in order (Browser.close from a client, or to save a profile).
      if (exit.code === 0) log.info({ pid, rootDir }, 'chromium closed');
      else log.warn({ pid, rootDir, ...exit, stderr: lastLines(stderrTail) }, 'chromium exited unexpectedly');
    });

    const close = () =>
      (closing ??= (async () => {
        // Killed, not closed gracefully: the profile goes with the root, so there is
        // nothing for Chromium to flush, and its orderly shutdown takes 150 ms or more that
        // every DELETE would wait for. A SIGKILLed process writes nothing more, so the root
        // is removed while the kernel tears the processes down, and Xvfb stops meanwhile.
        const stopping = xvfb?.stop();
        if (!hasExited()) {
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            // gone
          }
        }
        const [died] = await Promise.all([within(exited, KILL_WAIT_MS), removeRoot(rootDir, log), stopping]);
        if (!died) log.error({ pid, rootDir }, 'chromium did not exit after SIGKILL');
        // Whatever is left: children still dying, the crash handler (outside the group).
        const left = await killRootProcesses(identity);
        if (left.length > 0) log.error({ rootDir, pids: left }, 'processes of a closed browser would not die');
        else if (group && !group.remove()) log.error({ rootDir, groups: group.dirs }, 'could not remove the control groups of a closed browser');
        live.delete(identity);
        if (frozen) letGo(pid);
        log.info({ pid, rootDir }, 'browser closed');
      })());

    return {
      wsEndpoint,
      pid,
      ...(xvfb ? { display: xvfb.display } : {}),
      rootDir,
      geometry: geo,
      pipe: { input: spawned.stdio[3] as NodeJS.WritableStream, output: spawned.stdio[4] as NodeJS.ReadableStream },
      adopt(sessionId: string) {
        const current = readOwner(rootDir) ?? owner;
        writeOwner(rootDir, { ...current, sessionId });
      },
      close,
      freeze() {
        if (closing || hasExited() || frozen) return;
        frozen = true;
        holdFrozen(pid);
        try {
          process.kill(-pid, 'SIGSTOP');
        } catch {
          // gone
        }
      },
      exited,
      ...(group ? { group } : {}),
      foreground: () => (group ? group.foreground() : void toForeground(pid)),
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/**
 * `rejected` rejects when the signal aborts (never settles without one). dispose() removes
 * the listener: the pool's signal lives as long as the pool and sees every launch.
 */
function onAbort(signal: AbortSignal | undefined): { rejected: Promise<never>; dispose(): void } {
  let listener: (() => void) | undefined;
  const rejected = new Promise<never>((_, rej) => {
    if (!signal) return;
    if (signal.aborted) return rej(signal.reason);
    listener = () => rej(signal.reason);
    signal.addEventListener('abort', listener, { once: true });
  });
  rejected.catch(() => {}); // observed by the race; never unhandled after dispose
  return { rejected, dispose: () => listener && signal?.removeEventListener('abort', listener) };
}

async function removeRoot(rootDir: string, log: Log): Promise<void> {
  // A process that was still writing when killed can recreate a file mid-removal
  // (ENOTEMPTY): retry a few times.
  try {
    await rm(rootDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  } catch (err) {
    log.error({ rootDir, err: (err as Error).message }, 'could not remove a browser root');
  }
}

/**
 * The tab strip and toolbar of a normal window, measured once per Chromium binary and
 * mode by launching a throwaway browser (about a second, once per server process): they
 * depend on the Chromium version, so they are not hard-coded.
 */
const insetsCache = new Map<string, Promise<WindowInsets>>();

function windowInsets(headless: boolean, env: LaunchEnv & { rootDir: string }): Promise<WindowInsets> {
  const key = `${env.chromiumPath}\0${headless}`;
  let cached = insetsCache.get(key);
  if (!cached) {
    cached = calibrate(headless, env);
    insetsCache.set(key, cached);
    cached.catch(() => insetsCache.delete(key)); // try again at the next launch
  }
  return cached;
}

async function calibrate(headless: boolean, env: LaunchEnv & { rootDir: string }): Promise<WindowInsets> {
  const viewport = { width: 800, height: 600 };
  const rootDir = join(dirname(env.rootDir), `.calibrate-${randomBytes(6).toString('hex')}`);
  // With zero insets the window is exactly 800x600; what the page gets tells the insets.
  const browser = await start({ ...DEFAULT_LAUNCH_OPTIONS, headless, viewport, adblock: false }, { ...env, rootDir, sessionId: null }, { width: 0, height: 0 });
  try {
    const cdp = await CdpClient.connect(browser.wsEndpoint);
    try {
      const m = await measureSettled(cdp);
      const insets = { width: m.bounds.width - m.inner.width, height: m.bounds.height - m.inner.height };
      env.log.info({ headless, insets, chromiumPath: env.chromiumPath }, 'measured Chromium window insets');
      return insets;
    } finally {
      cdp.close();
    }
  } finally {
    await browser.close();
  }
}
