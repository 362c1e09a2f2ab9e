// The files a session's agent may use (POST /v1/sessions/{id}/agent/files, the vendor's
// "agent resources"): kept in the browser's root (agent-files/), where the browser's file
// inputs read them and whence they go with the browser. A ZIP is unpacked, its folders
// kept; anything else is kept as it is. The agent is told their names, reads a text file
// and uploads a file into a page (actions.ts). A session's files are written one upload at
// a time, so that its limits are checked against what is really there.
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { RunningSession } from '../capability/index.js';
import { OneAtATime } from '../storage/one-at-a-time.js';
import { safeFileName } from '../storage/file-names.js';
import { ArchiveError, eachEntry, isLink, openStream } from '../storage/zip.js';

export interface AgentFile {
  /** Relative to the agent's folder, segments separated by `/`. */
  name: string;
  size: number;
}

export type AgentFilesResult = { ok: true; files: AgentFile[]; message: string } | { ok: false; status: 400 | 413; message: string };

/** What the agent sees of its session's files. */
export interface AgentFileAccess {
  list(): Promise<AgentFile[]>;
  /** The file's path on disk, or undefined when there is no such file. */
  path(name: string): Promise<string | undefined>;
}

export const MAX_AGENT_FILES = 1000;

const folderOf = (rootDir: string) => join(rootDir, 'agent-files');

/** Every file under `dir`, by its relative name. */
async function walk(dir: string): Promise<AgentFile[]> {
  const out: AgentFile[] = [];
  const visit = async (d: string): Promise<void> => {
    const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const full = join(d, e.name);
      if (e.isDirectory()) await visit(full);
      else if (e.isFile()) out.push({ name: relative(dir, full).split(sep).join('/'), size: (await stat(full)).size });
    }
  };
  await visit(dir);
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** An archive entry's name made safe segment by segment, as an upload's name is. */
function safeName(name: string): string {
  return name
    .split('/')
    .filter((part) => part !== '' && part !== '.')
    .map((part) => safeFileName(part, 'file'))
    .join('/');
}

export function agentFileAccess(rootDir: string): AgentFileAccess {
  const dir = folderOf(rootDir);
  return {
    list: () => walk(dir),
    async path(name) {
      const full = resolve(dir, name);
      if (!full.startsWith(resolve(dir) + sep)) return undefined;
      const st = await stat(full).catch(() => undefined);
      return st?.isFile() ? full : undefined;
    },
  };
}

export class AgentFiles {
  private readonly queue = new OneAtATime();

  /** `maxSessionBytes`: most bytes of agent files one session holds at once, unpacked. */
  constructor(private readonly maxSessionBytes: number) {}

  put(s: RunningSession, file: File): Promise<AgentFilesResult> {
    return this.queue.run(s.id, () => this.write(s, file));
  }

  private async write(s: RunningSession, file: File): Promise<AgentFilesResult> {
    const dir = folderOf(s.browser.rootDir);
    // Staged beside (the root's tmp/, same file system) and renamed into place: the agent
    // never reads half a file, and a refused upload leaves nothing.
    const stage = join(s.browser.rootDir, 'tmp', `agent-files-${randomBytes(6).toString('hex')}`);
    try {
      await mkdir(stage, { recursive: true });
      const bytes = Buffer.from(await file.arrayBuffer());
      const zip = /\.zip$/i.test(file.name);
      const staged = zip ? await this.unpack(bytes, stage) : await this.single(bytes, safeFileName(file.name, 'file'), stage);
      if (!staged.ok) return staged;
      const added = staged.files;
      const kept = (await walk(dir)).filter((f) => !added.some((a) => a.name === f.name));
      const total = kept.reduce((n, f) => n + f.size, 0) + added.reduce((n, f) => n + f.size, 0);
      if (total > this.maxSessionBytes) {
        return { ok: false, status: 413, message: `The session's agent files would exceed ${this.maxSessionBytes} bytes (${total} with this upload)` };
      }
      if (kept.length + added.length > MAX_AGENT_FILES) {
        return { ok: false, status: 413, message: `The session's agent would have ${kept.length + added.length} files; at most ${MAX_AGENT_FILES}` };
      }
      for (const f of added) {
        const target = join(dir, f.name);
        try {
          await mkdir(dirname(target), { recursive: true });
          await rename(join(stage, f.name), target);
        } catch (err) {
          if (!CLASH.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
          return { ok: false, status: 400, message: `${f.name} would be both a file and a folder of the agent's files` };
        }
      }
      const what = added.length === 1 ? `1 file` : `${added.length} files`;
      return { ok: true, files: added, message: zip ? `${what} for the agent from ${file.name}` : `${what} for the agent: ${added[0]!.name}` };
    } finally {
      await rm(stage, { recursive: true, force: true });
    }
  }

  private async single(bytes: Buffer, name: string, stage: string): Promise<AgentFilesResult> {
    if (bytes.length > this.maxSessionBytes) return { ok: false, status: 413, message: `The file is larger than ${this.maxSessionBytes} bytes` };
    await writeFile(join(stage, name), new Uint8Array(bytes));
    return { ok: true, files: [{ name, size: bytes.length }], message: '' };
  }

  /** Unpacks into `stage`, holding the archive to the limits as it goes (a ZIP bomb stops at them). */
  private async unpack(bytes: Buffer, stage: string): Promise<AgentFilesResult> {
    const files = new Map<string, number>();
    let total = 0;
    try {
      await eachEntry(bytes, async (entry, zipfile) => {
        if (entry.fileName.endsWith('/') || isLink(entry)) return;
        const name = safeName(entry.fileName);
        const target = resolve(stage, name);
        if (name === '' || !target.startsWith(resolve(stage) + sep)) throw new ArchiveError(`Entry outside the archive's folder: ${entry.fileName}`);
        total += entry.uncompressedSize;
        if (total > this.maxSessionBytes) throw new TooLarge(`The archive unpacks to more than ${this.maxSessionBytes} bytes`);
        if (files.size >= MAX_AGENT_FILES && !files.has(name)) throw new TooLarge(`The archive holds more than ${MAX_AGENT_FILES} files`);
        try {
          await mkdir(dirname(target), { recursive: true });
          await pipeline(await openStream(zipfile, entry), createWriteStream(target, { mode: 0o644 }));
        } catch (err) {
          if (CLASH.has((err as NodeJS.ErrnoException).code ?? '')) throw new ArchiveError(`${name} is both a file and a folder in the archive`);
          throw err;
        }
        files.set(name, entry.uncompressedSize);
      });
    } catch (err) {
      if (err instanceof TooLarge) return { ok: false, status: 413, message: err.message };
      if (err instanceof ArchiveError) return { ok: false, status: 400, message: err.message };
      throw err;
    }
    if (files.size === 0) return { ok: false, status: 400, message: 'The archive holds no file' };
    return { ok: true, files: [...files].map(([name, size]) => ({ name, size })), message: '' };
  }
}

/** An ArchiveError, so that eachEntry passes it on as it is. */
class TooLarge extends ArchiveError {}

/** What the file system says when a name is a file in one place and a folder in another. */
const CLASH = new Set(['EEXIST', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY']);
