// rootDir/owner.json: who launched the processes of a browser root, so that the next
// server start can find and kill what a killed server left behind (sweep.ts).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isRunning, selfIdentity } from './procfs.js';

export const OWNER_FILE = 'owner.json';

export interface OwnerRecord {
  version: 1;
  /** Absolute path of the root when its processes started: their argv names it. */
  rootDir: string;
  /** Value of the marker variable in the environment of the root's processes. */
  marker: string;
  /** The session the browser serves; null while it waits in the pool. */
  sessionId: string | null;
  /** [chromium, xvfb] as far as started. */
  pids: number[];
  /** Process groups we created (each spawned detached, so pgid = pid). */
  pgids: number[];
  /** The browser's control groups (cgroup.ts), made after this record was written: removed once its processes are gone. */
  cgroups?: string[];
  /** Xvfb's display (":N"), to remove its lock files if it had to be SIGKILLed. */
  display?: string;
  serverPid: number;
  /** serverPid's start time and the boot id: a pid alone may have been reused. */
  serverStartTime: number;
  bootId: string;
  startedAt: string;
}

export function newOwnerRecord(rootDir: string, marker: string, sessionId: string | null): OwnerRecord {
  const self = selfIdentity();
  return {
    version: 1,
    rootDir,
    marker,
    sessionId,
    pids: [],
    pgids: [],
    serverPid: self.pid,
    serverStartTime: self.startTime,
    bootId: self.bootId,
    startedAt: new Date().toISOString(),
  };
}

/**
 * Synchronous on purpose: it is tiny, and callers need it on disk before the next step
 * (before spawning, before handing a pooled browser to a session). Written to a temporary
 * name and renamed, so a crash never leaves half a file.
 */
export function writeOwner(dir: string, record: OwnerRecord): void {
  const tmp = join(dir, `.${OWNER_FILE}.tmp`);
  writeFileSync(tmp, JSON.stringify(record, null, 2));
  renameSync(tmp, join(dir, OWNER_FILE));
}

export function readOwner(dir: string): OwnerRecord | undefined {
  try {
    const r = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    if (r && r.version === 1 && typeof r.marker === 'string' && typeof r.rootDir === 'string' && typeof r.serverPid === 'number') {
      return r as OwnerRecord;
    }
  } catch {
    // missing or unreadable
  }
  return undefined;
}

/** Whether the server process that wrote the record still runs. */
export function ownerIsAlive(record: OwnerRecord): boolean {
  const self = selfIdentity();
  if (record.bootId !== self.bootId) return false;
  return isRunning(record.serverPid, record.serverStartTime);
}

export function ownedByThisProcess(record: OwnerRecord): boolean {
  const self = selfIdentity();
  return record.serverPid === self.pid && record.serverStartTime === self.startTime && record.bootId === self.bootId;
}
