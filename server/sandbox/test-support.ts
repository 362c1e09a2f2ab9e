// Shared by the sandbox's end-to-end tests (not a test itself): a server with a running
// headless session whose cdp_url the runs reach, a page server, and a sandbox of cold runs
// (no warm child) whose directories go under a root of the file's own, so that after each
// run nothing of it may remain: no directory there and no process that names it.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import { createLogger } from '../log.js';
import { createSession, HEADLESS, startPageServer, type PageServer } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { createSandbox, type Sandbox } from './index.js';

export interface SandboxBench {
  server: TestServer;
  pages: PageServer;
  cdpUrl: string;
  sessionId: string;
  sandbox: Sandbox;
  runsRoot: string;
  /** After a run: its directory and every process of it are gone. */
  expectNothingLeft(): Promise<void>;
  close(): Promise<void>;
}

export async function startSandboxBench(): Promise<SandboxBench> {
  const server = await startTestServer();
  const pages = await startPageServer();
  const session = await createSession(server, HEADLESS);
  // The runs' directories go under a root of this file's own: what is left there (or any
  // process whose command line or mounts name it) after a run is a leak.
  const runsRoot = mkdtempSync(join(tmpdir(), 'cb-sandbox-test-'));
  // Like /tmp: the run's uid must be able to pass through to its own directory.
  chmodSync(runsRoot, 0o711);
  vi.stubEnv('TMPDIR', runsRoot);
  // Cold runs (no warm child) so that after each run nothing at all may remain.
  const sandbox = createSandbox({ config: { ...server.config, sandboxWarm: 0 }, log: createLogger('silent') });
  return {
    server,
    pages,
    cdpUrl: session.cdp_url,
    sessionId: session.id,
    sandbox,
    runsRoot,
    async expectNothingLeft() {
      await sandbox.settled();
      expect(readdirSync(runsRoot)).toEqual([]);
      expect(sandboxProcesses(runsRoot)).toEqual([]);
    },
    async close() {
      // As it was, or unset if it was: a plain assignment of undefined sets the string 'undefined'.
      vi.unstubAllEnvs();
      await sandbox.close();
      await pages.close();
      await server.close();
      rmSync(runsRoot, { recursive: true, force: true });
    },
  };
}

/** Live processes that belong to a run under `runsRoot`: their command line or mounts name it. */
function sandboxProcesses(runsRoot: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (/\) [ZX] /.test(stat)) return false;
        return readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(runsRoot) || readFileSync(`/proc/${pid}/mountinfo`, 'latin1').includes(runsRoot);
      } catch {
        return false;
      }
    })
    .map(Number);
}
