// At server start: kill the browsers and remove the roots that a previous server process
// left behind when it died without closing them (kill -9, OOM, power loss).
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Log } from './log.js';
import { removeGroups } from './cgroup.js';
import { ownedByThisProcess, ownerIsAlive, readOwner } from './owner.js';
import { killRootProcesses } from './procfs.js';
import { removeStaleXFiles } from './xvfb.js';

/**
 * Sweeps every root under browsersDir whose owner.json names a server process that no
 * longer runs (pid, start time and boot id are compared, so a reused pid does not count
 * as alive). Roots of this process and of other live servers sharing the directory are
 * left alone. A root's processes are killed only after /proc confirms they carry the
 * root's marker or path (pids are reused), then the directory is removed.
 *
 * Resolves with the session ids of the swept roots (owner.json's sessionId, which is the
 * directory name unless the launcher was told otherwise); roots of pooled browsers never
 * handed to a session are swept but not listed.
 */
export async function sweepOrphans(browsersDir: string, log: Log): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(browsersDir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const swept: string[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const dir = join(browsersDir, entry.name);
    const owner = readOwner(dir);
    if (!owner) {
      log.debug({ dir }, 'sweep: no owner.json, left alone');
      continue;
    }
    if (ownedByThisProcess(owner)) continue;
    if (ownerIsAlive(owner)) {
      log.info({ dir, serverPid: owner.serverPid }, 'sweep: root of another running server, left alone');
      continue;
    }
    const left = await killRootProcesses({ marker: owner.marker, rootDir: owner.rootDir });
    if (left.length > 0) {
      // Removing the directory under a live process would only make it fail oddly.
      log.error({ dir, pids: left }, 'sweep: processes of an orphaned browser would not die; root kept');
      continue;
    }
    if (owner.display) removeStaleXFiles(owner.display.slice(1));
    if (owner.cgroups) removeGroups(owner.cgroups);
    try {
      await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    } catch (err) {
      log.error({ dir, err: (err as Error).message }, 'sweep: could not remove an orphaned root');
      continue;
    }
    log.info({ dir, sessionId: owner.sessionId, pids: owner.pids }, 'sweep: removed an orphaned browser');
    if (owner.sessionId) swept.push(owner.sessionId);
  }
  return swept;
}
