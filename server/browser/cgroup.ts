// Each browser's memory and CPU cap: a control group of its own, one per controller (cgroup
// v1's memory and cpu hierarchies), made below this server's own groups before the
// browser's first process exists. Without it one page that allocates without end or spins
// every core degrades or kills every session of the node; with it the kernel stops that
// browser alone (its out-of-memory killer picks the largest process of the group, a
// renderer), and the session ends with end_reason `memory_limit` (oomKills()).
//
// A process joins a group by writing its own pid into the group's cgroup.procs, which only
// root may do for a root-owned group: the browser's first process is a root shell that joins
// and then becomes the browser's uid (setpriv) and the browser. Joining from outside after
// the spawn would race with the processes Chromium forks at once, which would stay outside.
//
// cgroup v2 (one unified hierarchy) is not handled yet: its "no processes in inner groups"
// rule needs the server moved into a leaf of its own first. Such a host runs without caps,
// which the start log and /healthz say (cgroupPlace()).
import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** A browser's caps: 0 is no cap of that kind. */
export interface BrowserLimits {
  /** Memory of the whole browser (every process, Xvfb's too), MiB. */
  memoryMb: number;
  /** CPU time, in cores (1.5: one and a half cores' worth of every period). */
  cpus: number;
}

/** Where browsers' groups are made: this server's own group in each controller's hierarchy. */
export interface CgroupPlace {
  memory: string;
  cpu: string;
}

const GROUP_PREFIX = 'cloud-browser-';
const CPU_PERIOD_US = 100_000;
/** cpu.shares of an ordinary group, and of a browser started ahead of need (the weight of nice 15, as cpu-priority.ts gives an autogroup). */
const FULL_SHARES = 1024;
const BACKGROUND_SHARES = 36;
/** How often a group's out-of-memory kills are looked at. */
const OOM_POLL_MS = 500;

/** This server's group in a v1 controller's hierarchy, as a folder; undefined where that controller is not mounted. */
function ownGroupDir(controller: string): string | undefined {
  const line = readFileSync('/proc/self/cgroup', 'utf8')
    .split('\n')
    .find((l) => l.split(':')[1]?.split(',').includes(controller));
  if (!line) return undefined;
  const path = line.split(':').slice(2).join(':');
  for (const mount of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    // id parent major:minor root mountpoint options - fstype source superoptions
    const [left, right] = mount.split(' - ');
    const [fstype, , superOptions] = (right ?? '').split(' ');
    if (fstype !== 'cgroup' || !superOptions?.split(',').includes(controller)) continue;
    const [, , , root, mountpoint] = left!.split(' ');
    // A container sees its own group as the root of the mount.
    const inside = root === '/' ? path : path.startsWith(root!) ? path.slice(root!.length) : undefined;
    if (inside !== undefined) return join(mountpoint!, inside);
  }
  return undefined;
}

/**
 * Where this server can cap its browsers, or why it cannot: the memory and cpu controllers
 * of cgroup v1 mounted, and this server allowed to make groups below its own (root, or the
 * groups delegated to it). Probed by making one and removing it.
 */
export function cgroupPlace(): CgroupPlace | { why: string } {
  let place: CgroupPlace;
  try {
    const memory = ownGroupDir('memory');
    const cpu = ownGroupDir('cpu');
    if (!memory || !cpu) return { why: 'the memory and cpu controllers of cgroup v1 are not mounted (cgroup v2 alone is not supported yet)' };
    place = { memory, cpu };
  } catch (err) {
    return { why: `control groups cannot be read here (${(err as Error).message})` };
  }
  try {
    BrowserGroup.make(place, `probe-${process.pid}`, { memoryMb: 64, cpus: 1 }, false).remove();
    return place;
  } catch (err) {
    return { why: `this server cannot make control groups below its own (${(err as Error).message}); run it as root` };
  }
}

/** The caps of BROWSER_MEMORY_LIMIT_MB and BROWSER_CPU_LIMIT when unset, where they can be enforced. */
export const DEFAULT_LIMITS: BrowserLimits = { memoryMb: 2048, cpus: 1 };

/** A start refused: caps were asked for and cannot be enforced. */
export class BrowserLimitsError extends Error {}

/**
 * At start: where browsers' groups are made and their default caps, or why browsers run
 * uncapped. Caps the operator set must hold (BrowserLimitsError otherwise); the defaults
 * hold where they can (a server that is not root runs uncapped, saying so).
 */
export function checkBrowserCaps(
  asked: { memoryMb: number | null; cpus: number | null },
  place: CgroupPlace | { why: string } = cgroupPlace(),
): { place: CgroupPlace; limits: BrowserLimits } | { off: string } {
  if ('why' in place) {
    if (asked.memoryMb || asked.cpus)
      throw new BrowserLimitsError(
        `BROWSER_MEMORY_LIMIT_MB and BROWSER_CPU_LIMIT cannot be enforced here: ${place.why}. Unset them (or set 0) to run browsers uncapped.`,
      );
    return { off: place.why };
  }
  removeLeftoverGroups(place);
  return { place, limits: { memoryMb: asked.memoryMb ?? DEFAULT_LIMITS.memoryMb, cpus: asked.cpus ?? DEFAULT_LIMITS.cpus } };
}

function tryRmdir(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/** How old an empty browser group must be to be taken for a leftover: no launch waits that long between its group and its first process. */
const LEFTOVER_AGE_MS = 10 * 60_000;

/**
 * Removes the empty browser groups of servers that were killed and whose roots no sweep will
 * see again (their DATA_DIR gone with them): the kernel refuses to remove a group that still
 * holds a process, so another server's running browsers keep theirs, and a group younger
 * than LEFTOVER_AGE_MS may be a launch's that has not started its first process yet.
 */
export function removeLeftoverGroups(place: CgroupPlace, olderThanMs = LEFTOVER_AGE_MS): void {
  for (const parent of [place.memory, place.cpu]) {
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue; // not a folder here (a place given by a test)
    }
    for (const name of names) {
      if (!name.startsWith(GROUP_PREFIX)) continue;
      const dir = join(parent, name);
      try {
        if (Date.now() - statSync(dir).ctimeMs < olderThanMs) continue;
        rmdirSync(dir);
      } catch {
        // busy (a browser runs in it) or gone meanwhile
      }
    }
  }
}

/** Removes groups a browser left (the sweep's, after its processes are gone): only browsers' groups, and those still busy stay. */
export function removeGroups(dirs: readonly string[]): void {
  for (const dir of dirs) if (dir.startsWith('/sys/fs/cgroup/') && basename(dir).startsWith(GROUP_PREFIX)) tryRmdir(dir);
}

/**
 * How to spawn `command` as `uid` (the server's when undefined), inside `group` when given:
 * then a shell, as root, writes its own pid into each of the group's cgroup.procs and execs
 * the command, through setpriv when the uid changes; Node's own uid switch would come
 * before the shell, which could then no longer join.
 */
export function spawnIn(
  group: BrowserGroup | undefined,
  command: string,
  args: string[],
  uid: number | undefined,
): { command: string; args: string[]; uid?: number } {
  if (!group) return { command, args, uid };
  const become = uid === undefined ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--'];
  const join = 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" && shift 2 && exec "$@"';
  return { command: '/bin/sh', args: ['-c', join, 'sh', ...group.dirs, ...become, command, ...args] };
}

export class BrowserGroup {
  private readonly memoryDir: string;
  private readonly cpuDir: string;
  private watch: NodeJS.Timeout | undefined;

  private constructor(place: CgroupPlace, name: string) {
    [this.memoryDir, this.cpuDir] = BrowserGroup.dirsOf(place, name);
  }

  /** The folders of the groups of the browser whose root is named `rootName`: for its owner record, which the sweep reads after a crash. */
  static dirsOf(place: CgroupPlace, rootName: string): [memory: string, cpu: string] {
    return [join(place.memory, GROUP_PREFIX + rootName), join(place.cpu, GROUP_PREFIX + rootName)];
  }

  /** Makes the browser's groups with its caps; `background`: a low CPU weight until foreground(). Nothing is left when it throws. */
  static make(place: CgroupPlace, rootName: string, limits: BrowserLimits, background: boolean): BrowserGroup {
    const group = new BrowserGroup(place, rootName);
    try {
      mkdirSync(group.memoryDir);
      mkdirSync(group.cpuDir);
      group.setLimits(limits);
      if (background) group.write(group.cpuDir, 'cpu.shares', BACKGROUND_SHARES);
    } catch (err) {
      group.remove();
      throw err;
    }
    return group;
  }

  /** Both folders. */
  get dirs(): string[] {
    return [this.memoryDir, this.cpuDir];
  }

  /**
   * Sets the caps (a session's project may have its own, set on a pooled browser when a
   * session takes it). Throws where the kernel refuses, as when the browser already holds
   * more than the new memory cap and nothing of it can be reclaimed.
   */
  setLimits(limits: BrowserLimits): void {
    const bytes = limits.memoryMb > 0 ? limits.memoryMb * 2 ** 20 : -1;
    // memsw (memory and swap) must never be below the memory cap: which goes first depends
    // on the direction; where swap is not accounted the file is absent.
    const memsw = () => this.tryWrite(this.memoryDir, 'memory.memsw.limit_in_bytes', bytes);
    if (!memsw()) {
      this.write(this.memoryDir, 'memory.limit_in_bytes', bytes);
      memsw();
    } else this.write(this.memoryDir, 'memory.limit_in_bytes', bytes);
    this.write(this.cpuDir, 'cpu.cfs_period_us', CPU_PERIOD_US);
    this.write(this.cpuDir, 'cpu.cfs_quota_us', limits.cpus > 0 ? Math.max(1_000, Math.round(limits.cpus * CPU_PERIOD_US)) : -1);
  }

  /** Its ordinary CPU weight (a pooled browser taken by a session). */
  foreground(): void {
    this.tryWrite(this.cpuDir, 'cpu.shares', FULL_SHARES);
  }

  /** The processes the kernel killed for the group's memory cap, so far. */
  oomKills(): number {
    try {
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(join(this.memoryDir, 'memory.oom_control'), 'utf8'));
      return m ? Number(m[1]) : 0;
    } catch {
      return 0; // removed
    }
  }

  /** Calls `hit` once, at the first out-of-memory kill in the group; stopped by remove(). */
  onMemoryLimit(hit: () => void): void {
    this.watch = setInterval(() => {
      if (this.oomKills() === 0) return;
      clearInterval(this.watch);
      hit();
    }, OOM_POLL_MS);
    this.watch.unref();
  }

  /** Removes the groups; false while a process is still in one (the caller kills first). */
  remove(): boolean {
    clearInterval(this.watch);
    return [this.memoryDir, this.cpuDir].map(tryRmdir).every(Boolean);
  }

  private write(dir: string, file: string, value: number): void {
    writeFileSync(join(dir, file), String(value));
  }

  private tryWrite(dir: string, file: string, value: number): boolean {
    try {
      this.write(dir, file, value);
      return true;
    } catch {
      return false;
    }
  }
}
