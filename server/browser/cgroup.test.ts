// Browsers in control groups of their own (cgroup.ts), on real Chromium, Xvfb and the
// kernel's cgroups: every process of a browser inside its groups with the caps set, the
// kernel's out-of-memory kill within the cap told, and nothing left on any end path.
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserGroup, BrowserLimitsError, cgroupPlace, checkBrowserCaps, DEFAULT_LIMITS, removeLeftoverGroups, type CgroupPlace } from './cgroup.js';
import { launchBrowser } from './launch.js';
import { DEFAULT_LAUNCH_OPTIONS } from './launch-options.js';
import { newOwnerRecord, writeOwner } from './owner.js';
import { sweepOrphans } from './sweep.js';
import { MARKER_VARIABLE } from './procfs.js';
import { chromiumPath, environOf, eventually, groupMembers, listDir, ownerOf, readEach, tempBrowsersDir, testLog } from './test-support.js';

const log = testLog();
const found = cgroupPlace();
const why = 'why' in found ? found.why : undefined;
if (why) console.log(`server/browser/cgroup.test.ts: the capped browsers' tests skipped: ${why}`);
const MiB = 2 ** 20;

const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8').trim();
/** The group of a process in one controller's hierarchy, as /proc/PID/cgroup names it. */
const groupOf = (pid: number, controller: string) =>
  readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes(controller))!
    .split(':')[2]!;
const uidOf = (pid: number) => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

let browsersDir: string;
beforeAll(() => {
  browsersDir = tempBrowsersDir();
});
afterAll(() => rmSync(browsersDir, { recursive: true, force: true }));

describe('checkBrowserCaps', () => {
  it('refuses caps the operator set where they cannot be enforced, and runs uncapped on the defaults there', () => {
    const nowhere = { why: 'no controllers' };
    expect(() => checkBrowserCaps({ memoryMb: 512, cpus: null }, nowhere)).toThrow(BrowserLimitsError);
    expect(() => checkBrowserCaps({ memoryMb: null, cpus: 0.5 }, nowhere)).toThrow(
      /BROWSER_MEMORY_LIMIT_MB and BROWSER_CPU_LIMIT cannot be enforced here: no controllers/,
    );
    expect(checkBrowserCaps({ memoryMb: null, cpus: null }, nowhere)).toEqual({ off: 'no controllers' });
    expect(checkBrowserCaps({ memoryMb: 0, cpus: 0 }, nowhere)).toEqual({ off: 'no controllers' });
    const place = { memory: '/m', cpu: '/c' };
    expect(checkBrowserCaps({ memoryMb: null, cpus: null }, place)).toEqual({ place, limits: DEFAULT_LIMITS });
    expect(checkBrowserCaps({ memoryMb: 0, cpus: 2 }, place)).toEqual({ place, limits: { memoryMb: 0, cpus: 2 } });
  });
});

describe.skipIf(why !== undefined)('a capped browser', () => {
  const place = found as CgroupPlace;

  it('runs every process, its Xvfb too, in groups of its own with its caps, sandboxed under its uid; the groups go with it', async () => {
    const rootDir = join(browsersDir, 'capped');
    const browser = await launchBrowser(
      { ...DEFAULT_LAUNCH_OPTIONS, headless: false },
      { chromiumPath, rootDir, log, cgroup: { place, limits: { memoryMb: 1024, cpus: 1.5 } } },
    );
    const [memoryDir, cpuDir] = BrowserGroup.dirsOf(place, 'capped');
    try {
      expect(browser.group?.dirs).toEqual([memoryDir, cpuDir]);
      expect(ownerOf(rootDir).cgroups).toEqual([memoryDir, cpuDir]);
      expect(Number(read(memoryDir!, 'memory.limit_in_bytes'))).toBe(1024 * MiB);
      expect(read(cpuDir!, 'cpu.cfs_quota_us')).toBe('150000');
      expect(read(cpuDir!, 'cpu.cfs_period_us')).toBe('100000');
      expect(read(cpuDir!, 'cpu.shares')).toBe('1024');
      const [chromiumPid, xvfbPid] = ownerOf(rootDir).pids;
      const processes = readEach([...groupMembers(chromiumPid!), xvfbPid!], (pid) => ({
        memory: groupOf(pid, 'memory'),
        cpu: groupOf(pid, 'cpu'),
        uid: uidOf(pid),
        cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8'),
      }));
      expect(processes.length).toBeGreaterThan(3);
      for (const p of processes) {
        expect(p.memory).toMatch(/\/cloud-browser-capped$/);
        expect(p.cpu).toMatch(/\/cloud-browser-capped$/);
        if (process.getuid?.() === 0) expect(p.uid).toBeGreaterThanOrEqual(300_000);
        expect(p.cmdline).not.toContain('--no-sandbox');
      }
      // Nothing but the browser's is in them (its crash handler too, which leaves its process group).
      const members = read(memoryDir!, 'cgroup.procs').split('\n').map(Number);
      // Those still running after the read: a helper may have ended meanwhile.
      expect(members).toEqual(expect.arrayContaining(processes.map((p) => p.pid).filter((pid) => existsSync(`/proc/${pid}`))));
      const marker = ownerOf(rootDir).marker;
      const ours = new Set([...groupMembers(chromiumPid!), xvfbPid!]);
      const strangers = readEach(
        members.filter((pid) => !ours.has(pid)),
        (pid) => ({ marker: environOf(pid, MARKER_VARIABLE) }),
      ).filter((p) => p.marker !== marker);
      expect(strangers).toEqual([]);

      // A session's project's caps, lowered and raised.
      browser.group!.setLimits({ memoryMb: 512, cpus: 0 });
      expect(Number(read(memoryDir!, 'memory.limit_in_bytes'))).toBe(512 * MiB);
      expect(read(cpuDir!, 'cpu.cfs_quota_us')).toBe('-1');
      browser.group!.setLimits({ memoryMb: 4096, cpus: 0.5 });
      expect(Number(read(memoryDir!, 'memory.limit_in_bytes'))).toBe(4096 * MiB);
      expect(read(cpuDir!, 'cpu.cfs_quota_us')).toBe('50000');
    } finally {
      await browser.close();
    }
    expect(existsSync(memoryDir!)).toBe(false);
    expect(existsSync(cpuDir!)).toBe(false);
    expect(listDir(browsersDir)).toEqual([]);
  });

  it('tells when a page allocates past the cap: the kernel kills a process within it, the browser itself lives on', async () => {
    const browser = await launchBrowser(
      { ...DEFAULT_LAUNCH_OPTIONS, headless: true },
      { chromiumPath, rootDir: join(browsersDir, 'hog'), log, cgroup: { place, limits: { memoryMb: 512, cpus: 0 } } },
    );
    const [memoryDir] = browser.group!.dirs;
    try {
      const hit = new Promise<void>((resolve) => browser.group!.onMemoryLimit(resolve));
      expect(browser.group!.oomKills()).toBe(0);
      const client = await chromium.connectOverCDP(browser.wsEndpoint);
      const page = client.contexts()[0]!.pages()[0]!;
      // Allocates until it is stopped; the evaluation itself returns at once.
      await page.evaluate(() => {
        const kept: Float64Array[] = [];
        setInterval(() => {
          for (let i = 0; i < 8; i++) kept.push(new Float64Array(2 ** 17).fill(1));
        }, 0);
      });
      await hit;
      expect(browser.group!.oomKills()).toBeGreaterThan(0);
      expect(Number(read(memoryDir!, 'memory.max_usage_in_bytes'))).toBeLessThanOrEqual(512 * MiB);
      expect(() => process.kill(browser.pid, 0)).not.toThrow();
      await client.close().catch(() => {});
    } finally {
      await browser.close();
    }
    expect(existsSync(memoryDir!)).toBe(false);
  }, 60_000);

  it("starts at a background CPU weight when asked (the warm pool's refills) and takes its full share back", () => {
    const group = BrowserGroup.make(place, 'background', { memoryMb: 0, cpus: 0 }, true);
    const [, cpuDir] = group.dirs;
    try {
      expect(read(cpuDir!, 'cpu.shares')).toBe('36');
      group.foreground();
      expect(read(cpuDir!, 'cpu.shares')).toBe('1024');
    } finally {
      expect(group.remove()).toBe(true);
    }
    expect(existsSync(cpuDir!)).toBe(false);
  });

  it("removes at start the empty groups a killed server's browsers left, never one a process is in", async () => {
    const left = BrowserGroup.make(place, 'left-behind', { memoryMb: 256, cpus: 1 }, false);
    const busy = await launchBrowser(
      { ...DEFAULT_LAUNCH_OPTIONS, headless: true },
      { chromiumPath, rootDir: join(browsersDir, 'busy'), log, cgroup: { place, limits: DEFAULT_LIMITS } },
    );
    try {
      removeLeftoverGroups(place, 0);
      expect(left.dirs.some((d) => existsSync(d))).toBe(false);
      expect(busy.group!.dirs.every((d) => existsSync(d))).toBe(true);
    } finally {
      await busy.close();
    }
  });

  it('is swept with its groups when its server died', async () => {
    const rootDir = join(browsersDir, 'orphan');
    mkdirSync(rootDir);
    const group = BrowserGroup.make(place, 'orphan', { memoryMb: 256, cpus: 1 }, false);
    // A server that no longer runs: a pid that cannot be one.
    writeOwner(rootDir, { ...newOwnerRecord(rootDir, 'marker', null), serverPid: 2 ** 22 + 1, cgroups: group.dirs });
    expect(group.dirs.every((d) => existsSync(d))).toBe(true);
    await sweepOrphans(browsersDir, log);
    expect(group.dirs.some((d) => existsSync(d))).toBe(false);
    await eventually(() => !existsSync(rootDir), 5_000, 'the root to be removed');
  });
});
