// Saved profiles unpacked once per node and version, so that a session starts from a copy
// of a folder, as a raw Playwright user copying a user-data directory would, rather than
// from inflating the archive (about three times the copy's time for 20 MB on this project's
// machine: bench/profile-start). An entry is a stored object (a profile's version), unpacked
// whole into a temporary folder and renamed into place, so a half-written entry is never
// read; entries are dropped when their profile moves on to another version or is deleted
// (once no session copies from them), and past MAX_ENTRIES the least recently used go.
// The folder is a cache: removed at start and at close.
import { randomBytes } from 'node:crypto';
import { cp, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';

const MAX_ENTRIES = 32;

interface Entry {
  dir: Promise<string>;
  users: number;
  stale: boolean;
  used: number;
}

export class UnpackedProfiles {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly root: string) {}

  async reset(): Promise<void> {
    this.entries.clear();
    await rm(this.root, { recursive: true, force: true });
  }

  /** Copies the version `key` into `target`, unpacking it first when this node has not yet. */
  async copyTo(key: string, target: string, unpackInto: (dir: string) => Promise<void>): Promise<void> {
    let entry = this.entries.get(key);
    if (!entry) {
      entry = { dir: this.unpack(unpackInto), users: 0, stale: false, used: 0 };
      this.entries.set(key, entry);
      const made = entry;
      made.dir.catch(() => this.entries.get(key) === made && this.entries.delete(key));
    }
    entry.users++;
    entry.used = Date.now();
    try {
      await cp(await entry.dir, target, { recursive: true });
    } finally {
      entry.users--;
      if (entry.stale) this.drop(key, entry);
    }
    this.evict();
  }

  /** The version is replaced or its profile deleted: its entry goes once nobody copies it. */
  forget(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    entry.stale = true;
    this.drop(key, entry);
  }

  private async unpack(unpackInto: (dir: string) => Promise<void>): Promise<string> {
    const name = randomBytes(8).toString('hex');
    const partial = join(this.root, `.partial-${name}`);
    const dir = join(this.root, name);
    await mkdir(this.root, { recursive: true });
    try {
      await unpackInto(partial);
      await rename(partial, dir);
      return dir;
    } catch (err) {
      await rm(partial, { recursive: true, force: true });
      throw err;
    }
  }

  private drop(key: string, entry: Entry): void {
    if (entry.users > 0) return;
    if (this.entries.get(key) === entry) this.entries.delete(key);
    void entry.dir.then((dir) => rm(dir, { recursive: true, force: true })).catch(() => {});
  }

  private evict(): void {
    const idle = [...this.entries].filter(([, e]) => e.users === 0).sort((a, b) => a[1].used - b[1].used);
    for (let excess = this.entries.size - MAX_ENTRIES; excess > 0 && idle.length > 0; excess--) {
      const [key, entry] = idle.shift()!;
      entry.stale = true;
      this.drop(key, entry);
    }
  }
}
