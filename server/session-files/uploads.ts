// Files uploaded into a running session (POST /v1/sessions/{sessionId}/uploads), written into
// its browser's root (rootDir/uploads), where DOM.setFileInputFiles and file choosers can
// read them; the root, and they with it, go when the browser closes. A session's uploads
// are written one at a time, so that its limit is checked against what is really there.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rootPaths } from '../browser/index.js';
import type { RunningSession } from '../capability/index.js';
import { OneAtATime } from '../storage/one-at-a-time.js';
import { safeFileName } from '../storage/file-names.js';

export type UploadResult = { ok: true; path: string; name: string; size: number } | { ok: false; message: string };

export class Uploads {
  private readonly queue = new OneAtATime();

  /** `maxSessionBytes`: most bytes of uploads one session holds at once. */
  constructor(private readonly maxSessionBytes: number) {}

  /** Writes the file into the session's uploads folder; a file of the same name is replaced. */
  put(s: RunningSession, file: File): Promise<UploadResult> {
    return this.queue.run(s.id, () => this.write(s, file));
  }

  private async write(s: RunningSession, file: File): Promise<UploadResult> {
    const dir = rootPaths(s.browser.rootDir).uploads;
    const name = safeFileName(file.name, 'upload');
    await mkdir(dir, { recursive: true });
    let held = 0;
    for (const other of await readdir(dir)) {
      if (other === name) continue; // replaced
      held += (await stat(join(dir, other)).catch(() => undefined))?.size ?? 0;
    }
    if (held + file.size > this.maxSessionBytes) {
      return { ok: false, message: `The session's uploads would exceed ${this.maxSessionBytes} bytes (${held} held, this file ${file.size})` };
    }
    // Written beside (the root's tmp/, Chromium's TMPDIR, on the same file system) and
    // renamed into place: a page never reads half a file.
    const partial = join(s.browser.rootDir, 'tmp', `upload-${randomBytes(6).toString('hex')}`);
    const path = join(dir, name);
    try {
      await writeFile(partial, new Uint8Array(await file.arrayBuffer()));
      await rename(partial, path);
    } finally {
      await rm(partial, { force: true });
    }
    return { ok: true, path, name, size: file.size };
  }
}
