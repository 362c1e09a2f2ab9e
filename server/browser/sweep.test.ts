import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOwnerRecord, writeOwner } from './owner.js';
import { isRunning, readStat } from './procfs.js';
import { sweepOrphans } from './sweep.js';
import { chromiumPath, eventually, leftovers, listDir, ownerOf, tempBrowsersDir, testLog, xSocket } from './test-support.js';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const fixture = fileURLToPath(new URL('./sweep-child.fixture.ts', import.meta.url));
const log = testLog();
let browsersDir: string;

beforeAll(() => {
  browsersDir = tempBrowsersDir();
});

afterAll(() => {
  rmSync(browsersDir, { recursive: true, force: true });
});

/** Starts the fixture server process and waits for its browsers. */
function startDoomedServer(dir: string, mode: 'hung' | 'running' | 'frozen'): Promise<{ child: ChildProcess; roots: string[]; display: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, dir, chromiumPath, mode], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve({ child, ...JSON.parse(out) });
    });
    child.once('exit', (code) => reject(new Error(`fixture exited (${code}): ${err}`)));
  });
}

describe('sweepOrphans', () => {
  it('browsers end with their server: killed with SIGKILL, its Chromium and Xvfb exit by themselves; the sweep removes the roots', async () => {
    const dir = join(browsersDir, 'ended');
    const { child, roots, display } = await startDoomedServer(dir, 'running');
    const socket = xSocket(display);
    expect(socket).not.toBeNull();
    const owners = roots.map((r) => ownerOf(r));
    expect(owners[0]!.pids).toHaveLength(2); // Chromium and Xvfb
    for (const owner of owners) expect(leftovers(owner).length).toBeGreaterThan(1);
    child.kill('SIGKILL');
    // The server's end closes the browsers' DevTools pipe: Chromium exits, then Xvfb (its
    // last client gone). Every process of the roots, children and crash handlers included.
    await eventually(() => owners.every((o) => leftovers(o).length === 0), 15_000, 'the browsers to exit');
    // The roots stay until a sweep (the next start).
    for (const r of roots) expect(existsSync(r)).toBe(true);
    expect((await sweepOrphans(dir, log)).sort()).toEqual(['orphan-headful', 'orphan-headless']);
    expect(listDir(dir)).toEqual([]);
    expect(xSocket(display)).not.toEqual(socket);
  });

  it('browsers frozen by their server (a task run, between its end and its teardown) end with it too', async () => {
    const dir = join(browsersDir, 'frozen');
    const { child, roots } = await startDoomedServer(dir, 'frozen');
    const owners = roots.map((r) => ownerOf(r));
    await eventually(() => owners.every((o) => readStat(o.pids[0]!)?.state === 'T'), 5_000, 'the browsers to be stopped');
    child.kill('SIGKILL');
    // Stopped, they read nothing from the closed pipe: the server's reaper kills their groups.
    await eventually(() => owners.every((o) => leftovers(o).length === 0), 15_000, 'the frozen browsers to be killed');
    expect((await sweepOrphans(dir, log)).sort()).toEqual(['orphan-headful', 'orphan-headless']);
    expect(listDir(dir)).toEqual([]);
  });

  it('kills the browsers (Chromium, Xvfb, crash handlers) that a server killed with SIGKILL left hung, and removes their roots', async () => {
    const dir = join(browsersDir, 'crash');
    const { child, roots, display } = await startDoomedServer(dir, 'hung');
    const socket = xSocket(display);
    expect(socket).not.toBeNull();
    const owners = roots.map((r) => ownerOf(r));
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;

    // The server is gone; its browsers, stopped, are not.
    for (const owner of owners) {
      expect(isRunning(owner.serverPid)).toBe(false);
      expect(isRunning(owner.pids[0]!)).toBe(true);
      expect(leftovers(owner).length).toBeGreaterThan(1);
    }
    expect(owners[0]!.pids).toHaveLength(2); // Chromium and Xvfb

    const swept = await sweepOrphans(dir, log);
    expect(swept.sort()).toEqual(['orphan-headful', 'orphan-headless']);
    for (const owner of owners) expect(leftovers(owner)).toEqual([]);
    expect(listDir(dir)).toEqual([]);
    expect(xSocket(display)).not.toEqual(socket);

    // Nothing left to sweep the second time.
    expect(await sweepOrphans(dir, log)).toEqual([]);
  });

  it('leaves live owners alone, sees through reused pids, and never kills a process it cannot verify', async () => {
    const dir = join(browsersDir, 'owners');
    mkdirSync(dir);
    // A live process that is not a server of ours, whose pid appears in the records below.
    const stranger = spawn('sleep', ['60'], { stdio: 'ignore' });
    const strangerStart = readStat(stranger.pid!)!.startTime;
    try {
      const root = (name: string, patch: (r: ReturnType<typeof newOwnerRecord>) => void) => {
        const rootDir = join(dir, name);
        mkdirSync(rootDir);
        const record = newOwnerRecord(rootDir, `marker-${name}`, name);
        patch(record);
        writeOwner(rootDir, record);
      };
      root('mine', () => {}); // this process: alive
      root('other-live-server', (r) => {
        r.serverPid = stranger.pid!;
        r.serverStartTime = strangerStart;
      });
      root('reused-pid', (r) => {
        // The pid runs, but it is not the process that wrote the record (other start time)
        // and the recorded browser pid now belongs to someone else.
        r.serverPid = stranger.pid!;
        r.serverStartTime = strangerStart + 1;
        r.pids = [stranger.pid!];
        r.pgids = [stranger.pid!];
      });
      root('previous-boot', (r) => {
        r.bootId = 'another-boot';
      });
      root('pool-idle', (r) => {
        r.serverPid = 999_999_999;
        r.sessionId = null;
      });
      mkdirSync(join(dir, 'no-owner-file'));

      const swept = await sweepOrphans(dir, log);
      expect(swept.sort()).toEqual(['previous-boot', 'reused-pid']);
      expect(listDir(dir).sort()).toEqual(['mine', 'no-owner-file', 'other-live-server']);
      expect(isRunning(stranger.pid!, strangerStart)).toBe(true);
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('returns nothing for a directory that does not exist', async () => {
    expect(await sweepOrphans(join(browsersDir, 'missing'), log)).toEqual([]);
  });
});
