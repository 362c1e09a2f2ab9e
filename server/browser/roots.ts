// Where an installation keeps its browsers' temporary roots. Session and tool browsers
// share the directory, so one sweep at start removes whatever a killed server left.
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * One identity per server installation (its data directory): a restart of the same node
 * recognises the browsers and sessions it left behind, a second installation does not.
 */
export function installationId(dataDir: string): string {
  return createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12);
}

/**
 * A short path: Chromium puts a Unix socket inside its TMPDIR, and socket paths are
 * limited to 107 bytes. owner.json in each root says who launched it.
 */
export function browsersDirFor(dataDir: string): string {
  return join(tmpdir(), `cb-${installationId(dataDir)}`);
}
