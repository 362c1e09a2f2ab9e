// The last step of a sandbox's dispose: no process of the jail left, whatever its pipes said.
// The race it closes (the pid namespace emptied only after the pipes closed: seen once, in a
// full run, under load) depends on the kernel's timing, so here its parts are driven
// directly: processes of a run's uid, and processes whose mounts name a run's directory.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BWRAP, jailProcesses } from './jail.js';
import { reapJail } from './jailed.js';

const isRoot = process.getuid?.() === 0;
/** Outside the range runs get their uids from (jail.ts), so no run of another test file has it. */
const UID = 199_999;
const quiet = { warn: () => {} };

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

function sleeper(command: string, args: string[]): ChildProcess {
  const child = spawn(command, args, { stdio: 'ignore' });
  started.push(child);
  return child;
}

/** Until `ok()` or 5 s. */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
}

describe.skipIf(!isRoot)('reapJail (needs root: a uid of its own and mounts, as a run has when the server is root)', () => {
  it("kills what is left under the jail's uid and returns once none is", async () => {
    for (let i = 0; i < 3; i++) sleeper('/usr/bin/setpriv', [`--reuid=${UID}`, `--regid=${UID}`, '--clear-groups', '--', '/usr/bin/sleep', '60']);
    await until(() => jailProcesses('/nowhere', UID).length === 3);
    expect(jailProcesses('/nowhere', UID)).toHaveLength(3);
    await reapJail('/nowhere', UID, quiet);
    expect(jailProcesses('/nowhere', UID)).toEqual([]);
  });

  // In TMPDIR, and on /dev/shm: a tmpfs of its own, as /tmp is on many systems, where a bind
  // mount's root in mountinfo is the path within that filesystem (/cb-reap-test-…), not the full one.
  it.each([...new Set(['/tmp', tmpdir(), '/dev/shm'])])(
    'finds the processes whose mounts name the run directory when the jail has no uid of its own (in %s)',
    async (parent) => {
      const runDir = mkdtempSync(join(parent, 'cb-reap-test-'));
      try {
        // A mount namespace with the directory bound in it, as bwrap makes a jail's.
        sleeper(BWRAP, ['--dev-bind', '/', '/', '--bind', runDir, '/mnt', '--', '/usr/bin/sleep', '60']);
        await until(() => jailProcesses(runDir, undefined).length > 0);
        expect(jailProcesses(runDir, undefined).length).toBeGreaterThan(0);
        await reapJail(runDir, undefined, quiet);
        expect(jailProcesses(runDir, undefined)).toEqual([]);
      } finally {
        rmSync(runDir, { recursive: true, force: true });
      }
    },
  );
});
