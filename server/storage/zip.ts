// ZIP archives, read with yauzl and written with yazl: uploaded extensions and saved
// profiles. Reading visits entries one at a time and holds each to the size its header
// declares (validateEntrySizes), so a ZIP bomb stops at its own lie; writing keeps regular
// files and folders only.
import { createWriteStream } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { ZipFile as ZipWriter } from 'yazl';

/** What is wrong with an archive, in words for the user who sent it. */
export class ArchiveError extends Error {}

export type { Entry, ZipFile };

/** An archive in memory, or in a file (read in place, never loaded whole). */
export type ZipSource = Buffer | { path: string };

/** Visits every entry in order, one at a time; any error (yauzl's names, sizes and format checks included) is an ArchiveError. */
export async function eachEntry(source: ZipSource, visit: (entry: Entry, zipfile: ZipFile) => Promise<void>): Promise<void> {
  const options = { lazyEntries: true, validateEntrySizes: true, strictFileNames: true, decodeStrings: true } as const;
  let zipfile: ZipFile;
  try {
    zipfile = await new Promise<ZipFile>((ok, fail) => {
      const done = (err: Error | null, z: ZipFile) => (err ? fail(err) : ok(z));
      if (Buffer.isBuffer(source)) yauzl.fromBuffer(source, options, done);
      else yauzl.open(source.path, { ...options, autoClose: false }, done);
    });
  } catch (err) {
    throw new ArchiveError(`The file is not a ZIP archive: ${(err as Error).message}`);
  }
  try {
    await new Promise<void>((ok, fail) => {
      zipfile.on('error', (err: Error) => fail(err));
      zipfile.on('end', () => ok());
      zipfile.on('entry', (entry: Entry) => {
        visit(entry, zipfile).then(() => zipfile.readEntry(), fail);
      });
      zipfile.readEntry();
    });
  } catch (err) {
    if (err instanceof ArchiveError) throw err;
    throw new ArchiveError(`The ZIP archive is invalid: ${(err as Error).message}`);
  } finally {
    zipfile.close();
  }
}

export function openStream(zipfile: ZipFile, entry: Entry): Promise<Readable> {
  return new Promise((ok, fail) => zipfile.openReadStream(entry, (err, stream) => (err ? fail(err) : ok(stream))));
}

/** A Unix symbolic link, as zip tools that keep modes mark it. */
export function isLink(entry: Entry): boolean {
  return ((entry.externalFileAttributes >>> 16) & 0o170000) === 0o120000;
}

/**
 * Writes the entries under `prefix` (without it) into `dir`, folders included. Names that
 * would land outside `dir` are refused (yauzl's strictFileNames already refuses absolute
 * paths and `..`; a second look costs nothing).
 */
export async function unzip(source: ZipSource, dir: string, prefix = ''): Promise<void> {
  const root = resolve(dir);
  await mkdir(root, { recursive: true });
  await eachEntry(source, async (entry, zipfile) => {
    if (!entry.fileName.startsWith(prefix) || isLink(entry)) return;
    const name = entry.fileName.slice(prefix.length);
    if (name === '') return;
    const target = resolve(join(root, name));
    if (!target.startsWith(root + sep)) throw new ArchiveError(`Entry outside the archive's folder: ${entry.fileName}`);
    if (name.endsWith('/')) {
      await mkdir(target, { recursive: true });
      return;
    }
    await mkdir(dirname(target), { recursive: true });
    await pipeline(await openStream(zipfile, entry), createWriteStream(target, { mode: 0o644 }));
  });
}

/**
 * Archives the regular files and folders under `dir` into the file `out`, leaving out what
 * `skip` names (paths relative to `dir`, with `/`; a skipped folder is skipped whole).
 * Symbolic links, sockets and the like are left out. Answers the number of files.
 */
export async function zipDirectory(dir: string, out: string, options: { skip?: (path: string) => boolean; level?: number } = {}): Promise<number> {
  const zip = new ZipWriter();
  const level = options.level ?? 6;
  let files = 0;
  const walk = async (rel: string): Promise<void> => {
    for (const entry of await readdir(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (options.skip?.(path)) continue;
      if (entry.isDirectory()) {
        zip.addEmptyDirectory(path);
        await walk(path);
      } else if (entry.isFile()) {
        zip.addFile(join(dir, path), path, { compressionLevel: level, mode: 0o100644 });
        files++;
      }
    }
  };
  await walk('');
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(out));
  return files;
}
