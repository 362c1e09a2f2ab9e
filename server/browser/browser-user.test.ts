// Whom browsers run as (browser-user.ts), on real Chromium and Xvfb: under a root server each
// browser is a uid of its own with the sandbox on, and nothing of another browser's root is
// its to read; BROWSER_SANDBOX=off is the only way to --no-sandbox, and it is said.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestServer } from '../testing/harness.js';
import { BrowserSandboxError, checkBrowserSandbox } from './browser-user.js';
import { launchBrowser, rootPaths, type RunningBrowser } from './launch.js';
import { browsersDirFor } from './roots.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { chromiumPath, groupMembers, ownerOf, readEach, tempBrowsersDir, testLog } from './test-support.js';

const log = testLog();
const root = process.getuid?.() === 0;
if (!root) console.log('server/browser/browser-user.test.ts: the uid-per-browser tests skipped: they need the tests to run as root, as CI does');
let browsersDir: string;

/** A process's real uid. */
const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
/** A process's command line as one string (Chromium's children set their title: one argument with spaces). */
const cmdlineOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
const userNamespaceOf = (pid: number) => readlinkSync(`/proc/${pid}/ns/user`);
/** Each process of a group that still runs as it is read: uid, command line and user namespace (a helper may end between the listing and the read). */
const processesOf = (pgid: number) =>
  readEach(groupMembers(pgid), (pid) => ({ uid: uidOf(pid), cmdline: cmdlineOf(pid), userNamespace: userNamespaceOf(pid) }));

beforeAll(() => {
  browsersDir = tempBrowsersDir();
});
afterAll(() => rmSync(browsersDir, { recursive: true, force: true }));

describe.skipIf(!root)('browsers of a root server', () => {
  let a: RunningBrowser;
  let b: RunningBrowser;
  beforeAll(async () => {
    [a, b] = await Promise.all([
      launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: false }, { chromiumPath, rootDir: join(browsersDir, 'a'), log }),
      launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: true }, { chromiumPath, rootDir: join(browsersDir, 'b'), log }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('run with their Xvfb under a uid of their own each, sandboxed: no --no-sandbox, renderers in namespaces of their own', async () => {
    const uidA = uidOf(a.pid);
    const uidB = uidOf(b.pid);
    expect(uidA).toBeGreaterThanOrEqual(300_000);
    expect(uidB).toBeGreaterThanOrEqual(300_000);
    expect(uidA).not.toBe(uidB);
    // A page open, so that renderers run.
    const pw = await chromium.connectOverCDP(a.wsEndpoint);
    await pw.contexts()[0]!.pages()[0]!.goto('data:text/html,<p>hi</p>');
    const processes = processesOf(a.pid);
    expect(processes.length).toBeGreaterThan(2);
    for (const p of processes) {
      expect(p.uid, p.cmdline).toBe(uidA);
      expect(p.cmdline).not.toContain('--no-sandbox');
    }
    const renderers = processes.filter((p) => p.cmdline.includes('--type=renderer'));
    expect(renderers.length).toBeGreaterThan(0);
    for (const p of renderers) expect(p.userNamespace).not.toBe(userNamespaceOf(process.pid));
    const xvfbPid = ownerOf(a.rootDir).pids[1]!;
    expect(cmdlineOf(xvfbPid)).toMatch(/^\S*Xvfb /);
    expect(uidOf(xvfbPid)).toBe(uidA);
    await pw.close();
  });

  it("own their root's folders alone; the root and its owner record stay the server's", () => {
    const uid = uidOf(a.pid);
    for (const folder of Object.values(rootPaths(a.rootDir))) {
      const s = statSync(folder);
      expect([s.uid, s.mode & 0o777], folder).toEqual([uid, 0o700]);
    }
    const rootStat = statSync(a.rootDir);
    expect([rootStat.uid, rootStat.mode & 0o777]).toEqual([0, 0o711]);
    expect(statSync(join(a.rootDir, 'owner.json')).uid).toBe(0);
  });

  it("cannot read another browser's root: not its processes' uid, not a page through file:", async () => {
    const localState = join(rootPaths(b.rootDir).userData, 'Local State');
    expect(readFileSync(localState, 'utf8')).toMatch(/^\{/);
    // As A's uid, the way an exploited renderer would try.
    const uidA = uidOf(a.pid);
    const read = spawnSync('cat', [localState], { uid: uidA, gid: uidA, encoding: 'utf8' });
    expect(read.status).not.toBe(0);
    expect(read.stderr).toMatch(/Permission denied/);
    // A page of A's browser (driven directly, not through the CDP proxy that refuses file:).
    const pw = await chromium.connectOverCDP(a.wsEndpoint);
    const page = pw.contexts()[0]!.pages()[0]!;
    await expect(page.goto(`file://${localState}`)).rejects.toThrow(/net::ERR_(ACCESS_DENIED|FILE_NOT_FOUND)/);
    // Its own root's file it can read: the check above could see one.
    const own = join(rootPaths(a.rootDir).userData, 'Local State');
    const ownPage = await pw.contexts()[0]!.newPage();
    await ownPage.goto(`file://${own}`);
    expect(JSON.parse(await ownPage.evaluate(() => document.body.innerText))).toBeTypeOf('object');
    await pw.close();
  });

  it('BROWSER_SANDBOX=off: the browser runs as the server, with --no-sandbox', async () => {
    const c = await launchBrowser({ ...DEFAULT_LAUNCH_OPTIONS, headless: true }, { chromiumPath, rootDir: join(browsersDir, 'c'), log, sandbox: false });
    try {
      expect(uidOf(c.pid)).toBe(0);
      expect(cmdlineOf(c.pid)).toContain('--no-sandbox');
    } finally {
      await c.close();
    }
  });
});

describe('checkBrowserSandbox', () => {
  it("answers 'on' where the sandbox can run, and makes DATA_DIR the server's alone under root", () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cb-bu-data-'));
    try {
      chmodSync(dataDir, 0o755);
      expect(checkBrowserSandbox({ sandbox: true, dataDir })).toBe('on');
      if (root) expect(statSync(dataDir).mode & 0o777).toBe(0o700);
      expect(checkBrowserSandbox({ sandbox: false, dataDir })).toBe('off');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses to start where an unprivileged user cannot make a user namespace, naming the opt-out', () => {
    // unshare(1) as a kernel without user namespaces for unprivileged users answers it.
    const bin = mkdtempSync(join(tmpdir(), 'cb-bu-bin-'));
    writeFileSync(join(bin, 'unshare'), '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n', { mode: 0o755 });
    chmodSync(bin, 0o755);
    vi.stubEnv('PATH', `${bin}:${process.env.PATH}`);
    try {
      expect(() => checkBrowserSandbox({ sandbox: true, dataDir: bin })).toThrow(BrowserSandboxError);
      expect(() => checkBrowserSandbox({ sandbox: true, dataDir: bin })).toThrow(/Operation not permitted.*BROWSER_SANDBOX=off/s);
      expect(checkBrowserSandbox({ sandbox: false, dataDir: bin })).toBe('off');
    } finally {
      vi.unstubAllEnvs();
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it.skipIf(!root)('refuses a TMPDIR that the browsers’ uids cannot reach', () => {
    const closed = mkdtempSync(join(tmpdir(), 'cb-bu-tmp-'));
    mkdirSync(join(closed, 'inner'));
    vi.stubEnv('TMPDIR', join(closed, 'inner'));
    try {
      expect(() => checkBrowserSandbox({ sandbox: true, dataDir: closed })).toThrow(new RegExp(`${closed} is not searchable by others`));
    } finally {
      vi.unstubAllEnvs();
      rmSync(closed, { recursive: true, force: true });
    }
  });
});

describe('a server', () => {
  it.skipIf(!root)("runs a session's browser, as the API made it, under a uid of its own with the sandbox on", async () => {
    const server = await startTestServer();
    try {
      const res = await server.request('/v1/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(res.status).toBe(200);
      const { id } = ((await res.json()) as { data: { id: string } }).data;
      const browsers = browsersDirFor(server.dataDir);
      const owner = readdirSync(browsers)
        .map((name) => ownerOf(join(browsers, name)))
        .find((o) => o.sessionId === id)!;
      const [chromiumPid, xvfbPid] = owner.pids;
      const uid = uidOf(chromiumPid!);
      expect(uid).toBeGreaterThanOrEqual(300_000);
      expect(uidOf(xvfbPid!)).toBe(uid);
      for (const p of processesOf(chromiumPid!)) {
        expect(p.uid).toBe(uid);
        expect(p.cmdline).not.toContain('--no-sandbox');
      }
      expect((await server.request(`/v1/sessions/${id}`, { method: 'DELETE' })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("says in /healthz whether its browsers' sandbox is on, and warns at start when it is off", async () => {
    const on = await startTestServer();
    const logs: string[] = [];
    const off = await startTestServer({ env: { BROWSER_SANDBOX: 'off', LOG_LEVEL: 'warn' }, logs });
    try {
      expect(((await (await fetch(`${on.url}/healthz`)).json()) as any).browsers.sandbox).toBe('on');
      expect(((await (await fetch(`${off.url}/healthz`)).json()) as any).browsers.sandbox).toBe('off');
      expect(logs.some((l) => /browser sandbox off \(BROWSER_SANDBOX=off\)/.test(l))).toBe(true);
    } finally {
      await on.close();
      await off.close();
    }
  });
});
