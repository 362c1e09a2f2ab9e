// Whom a browser runs as. Chromium's sandbox cannot start as root, so a server running as
// root (scripts/setup.sh's way) used to start every browser with --no-sandbox: a renderer
// exploit from any page then ran as root, beside every other tenant's browser, the database
// and SECRETS_KEY. Now each browser a root server launches runs, with its Xvfb, under a uid
// of its own from a range no distribution gives to accounts, with the sandbox on: it owns
// its root's folders and nothing else, so another session's browser, of another uid, can
// read neither them nor DATA_DIR (0700, the server's). A server that is not root runs its
// browsers as itself, sandbox on. Only the operator's explicit BROWSER_SANDBOX=off runs them
// as the server, without it (checkBrowserSandbox says so at start, and /healthz).
import { spawnSync } from 'node:child_process';
import { chmod, chown, lstat, readdir } from 'node:fs/promises';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const isRoot = () => process.getuid?.() === 0;

// The start is random so that two servers on one machine rarely hand out the same uid; the
// range is apart from the task sandbox's (200,000-259,999, sandbox/jail.ts).
const UID_BASE = 300_000;
const UID_SPAN = 60_000;
let nextUid = Math.floor(Math.random() * UID_SPAN);

/** The uid a new browser runs as: one of its own under a root server, undefined (the server's own) otherwise or without the sandbox. */
export function browserUid(sandbox: boolean): number | undefined {
  if (!sandbox || !isRoot()) return undefined;
  nextUid = (nextUid + 1) % UID_SPAN;
  return UID_BASE + nextUid;
}

/**
 * Gives every folder of the root to the browser's uid (0700 each, every file in them its
 * own: Chromium writes into its extensions' folders too); the root itself stays the
 * server's, 0711: searchable, not listable, its owner record not writable by the browser.
 */
export async function handOver(rootDir: string, uid: number): Promise<void> {
  await chmod(rootDir, 0o711);
  for (const entry of await readdir(rootDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const folder = join(rootDir, entry.name);
    await chownTree(folder, uid);
    await chmod(folder, 0o700);
  }
}

/** chown -R, without following links (a saved profile may hold some). */
async function chownTree(path: string, uid: number): Promise<void> {
  const stat = await lstat(path);
  if (stat.isSymbolicLink()) return;
  await chown(path, uid, uid);
  if (!stat.isDirectory()) return;
  for (const name of await readdir(path)) await chownTree(join(path, name), uid);
}

/** X's socket folder, which Xvfb under a uid of its own cannot make: made as X makes it (1777) when missing. */
export function ensureXSocketDir(): void {
  const dir = '/tmp/.X11-unix';
  try {
    statSync(dir);
  } catch {
    mkdirSync(dir, { mode: 0o1777 });
    chmodSync(dir, 0o1777);
  }
}

/** The first folder on the way to `path` that others cannot search, if any. */
function closedAncestor(path: string): string | undefined {
  for (let dir = path; ; dir = dirname(dir)) {
    if ((statSync(dir).mode & 0o001) === 0) return dir;
    if (dir === dirname(dir)) return undefined;
  }
}

/**
 * Makes the folder of a browser's root searchable by others (the launcher made it, and the
 * browser's uid must pass it), and refuses, saying which, a root that a folder further up
 * keeps the browser's uid from: Chromium would only crash at its start.
 */
export async function openForSearch(dir: string): Promise<void> {
  const { mode } = await lstat(dir);
  if ((mode & 0o001) === 0) await chmod(dir, (mode & 0o7777) | 0o011);
  const closed = closedAncestor(dir);
  if (closed) throw new Error(`a browser under a uid of its own cannot reach its root in ${dir}: ${closed} is not searchable by others (chmod o+x)`);
}

/** A start refused: the sandbox was asked for and cannot run. */
export class BrowserSandboxError extends Error {}

/**
 * At start: whether browsers run sandboxed ('on') or not ('off', the operator's opt-out);
 * refuses to start (BrowserSandboxError) when the sandbox is asked for and cannot run here.
 * Chromium's sandbox needs user namespaces for an unprivileged user (Debian's Chromium has
 * no setuid helper): probed with unshare(1) as such a user. Under a root server the browsers'
 * uids must also reach their roots below TMPDIR, and must not reach DATA_DIR (made 0700).
 */
export function checkBrowserSandbox(o: { sandbox: boolean; dataDir: string }): 'on' | 'off' {
  if (!o.sandbox) return 'off';
  const uid = isRoot() ? UID_BASE + UID_SPAN : undefined;
  const probe = spawnSync('unshare', ['--user', 'true'], { uid, gid: uid, stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  if (probe.error || probe.status !== 0) {
    const why = probe.error?.message ?? (probe.stderr.toString().trim() || `exit ${probe.status}`);
    throw new BrowserSandboxError(
      `Chromium's sandbox cannot start here: an unprivileged user cannot create a user namespace (unshare --user: ${why}). ` +
        'Allow user namespaces (sysctl user.max_user_namespaces above 0, and kernel.unprivileged_userns_clone=1 where it exists; ' +
        'in a container, the seccomp profile of docs/operations/container.md), or set BROWSER_SANDBOX=off to run browsers without it, ' +
        'which no service open to untrusted pages should.',
    );
  }
  if (uid !== undefined) {
    const closed = closedAncestor(tmpdir());
    if (closed)
      throw new BrowserSandboxError(
        `TMPDIR (${tmpdir()}) must be reachable by every user: ${closed} is not searchable by others (chmod o+x). The browsers' roots are below it, and each browser runs under a uid of its own.`,
      );
    mkdirSync(o.dataDir, { recursive: true, mode: 0o700 });
    chmodSync(o.dataDir, 0o700);
  }
  return 'on';
}
