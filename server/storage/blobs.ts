// Where finished files live (recordings, uploaded extensions, later profiles and task
// artifacts). Capabilities see only BlobStorage, so an S3-compatible store can take the
// file system's place: put a finished file under a key, read it back whole or one byte
// range at a time, learn its size, delete it.
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface BlobStorage {
  /** Stores the local file `path` under `key` (the file may be moved); answers its size. */
  put(key: string, path: string): Promise<{ size: number }>;
  /** The object's bytes, or one inclusive range of them; undefined when there is no object. */
  get(key: string, range?: ByteRange): Promise<Readable | undefined>;
  /** Size in bytes, or undefined when there is no object. */
  size(key: string): Promise<number | undefined>;
  /** Removes the object; removing a missing one is not an error. */
  delete(key: string): Promise<void>;
}

/** Objects as files under `root` (a folder of DATA_DIR: recordings, extensions), one a key. */
export class FsBlobStorage implements BlobStorage {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  async put(key: string, path: string): Promise<{ size: number }> {
    const target = this.pathOf(key);
    await mkdir(dirname(target), { recursive: true });
    try {
      await rename(path, target);
    } catch (err) {
      // Another file system (DATA_DIR on a mount): copy, then remove the original.
      if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
      await copyFile(path, target);
      await unlink(path);
    }
    return { size: (await stat(target)).size };
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    const path = this.pathOf(key);
    if ((await this.size(key)) === undefined) return undefined;
    return createReadStream(path, range ? { start: range.start, end: range.end } : {});
  }

  async size(key: string): Promise<number | undefined> {
    try {
      const s = await stat(this.pathOf(key));
      return s.isFile() ? s.size : undefined;
    } catch {
      return undefined;
    }
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  /** A key's file; a key that would leave the root is refused. */
  private pathOf(key: string): string {
    const path = resolve(join(this.root, key));
    if (!path.startsWith(this.root + sep)) throw new Error(`invalid storage key: ${key}`);
    return path;
  }
}

/** A capability's own area of the blob storage (recordings, extensions, …), by name. */
export type BlobAreas = (area: string) => BlobStorage;

/** Areas as folders of DATA_DIR: the default, chosen once by the assembly. */
export function fsBlobAreas(dataDir: string): BlobAreas {
  return (area) => new FsBlobStorage(join(dataDir, area));
}
