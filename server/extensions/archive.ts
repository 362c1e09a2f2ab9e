// An uploaded extension's ZIP, read with yauzl before anything of it is kept or written:
// every entry's name (no absolute path, no `..`, no backslash, no link) and size (the
// sum of what the headers declare, and yauzl holds each entry to its declared size while it
// inflates, so a ZIP bomb stops at the limit), and the manifest the browser will read.
import { buffer } from 'node:stream/consumers';
import { ArchiveError, eachEntry, isLink, openStream, unzip } from '../storage/zip.js';

export { ArchiveError };

export const LIMITS = { entries: 5_000, unpackedBytes: 100 * 1024 * 1024, manifestBytes: 1024 * 1024 } as const;

export interface Manifest {
  name: string;
  version: string;
  manifest_version: 3;
  description: string;
  permissions: string[];
}

export interface Inspected {
  manifest: Manifest;
  /** Where the extension is in the archive: '' (the root) or its one top folder, 'name/'. */
  prefix: string;
}

/** Checks the archive and reads its manifest. Throws ArchiveError with the reason. */
export async function inspect(zip: Buffer): Promise<Inspected> {
  const names: string[] = [];
  let total = 0;
  const manifests = new Map<string, Buffer>();
  await eachEntry(zip, async (entry, zipfile) => {
    if (names.length >= LIMITS.entries) throw new ArchiveError(`The archive has more than ${LIMITS.entries} entries`);
    if (isLink(entry)) throw new ArchiveError(`The archive holds a symbolic link (${entry.fileName}); extensions are plain files`);
    total += entry.uncompressedSize;
    if (total > LIMITS.unpackedBytes) throw new ArchiveError(`The archive unpacks to more than ${LIMITS.unpackedBytes / 1024 / 1024} MB`);
    names.push(entry.fileName);
    if (entry.fileName.endsWith('/')) return;
    if (/^([^/]+\/)?manifest\.json$/.test(entry.fileName)) {
      if (entry.uncompressedSize > LIMITS.manifestBytes) throw new ArchiveError('manifest.json is larger than 1 MB');
      manifests.set(entry.fileName, await buffer(await openStream(zipfile, entry)));
      return;
    }
    // Every entry is inflated once, here: one that holds more than its header says fails
    // now, not when a session unpacks it.
    for await (const _ of await openStream(zipfile, entry));
  });
  const prefix = manifests.has('manifest.json') ? '' : topFolder(names);
  const raw = prefix === undefined ? undefined : manifests.get(`${prefix}manifest.json`);
  if (!raw) throw new ArchiveError('The archive has no manifest.json at its root or in its one top folder');
  return { manifest: parseManifest(raw), prefix: prefix ?? '' };
}

/** Writes the extension's files (those under `prefix`, without it) into `dir`. */
export function unpack(zip: Buffer, prefix: string, dir: string): Promise<void> {
  // Checked whole at upload (inspect): here it is only written out.
  return unzip(zip, dir, prefix);
}

function parseManifest(raw: Buffer): Manifest {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(raw.toString('utf8').replace(/^\uFEFF/, '')) as Record<string, unknown>;
  } catch (err) {
    throw new ArchiveError(`manifest.json is not valid JSON: ${(err as Error).message}`);
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) throw new ArchiveError('manifest.json is not a JSON object');
  if (m.manifest_version === 2) {
    // Chromium 138 and later refuse to load Manifest V2 extensions: accepting one would
    // give sessions an extension that never runs.
    throw new ArchiveError('Manifest V2 extensions no longer run in Chromium; upload the Manifest V3 version (manifest_version 3)');
  }
  if (m.manifest_version !== 3) throw new ArchiveError('manifest.json: manifest_version must be 3');
  if (typeof m.name !== 'string' || !m.name.trim()) throw new ArchiveError('manifest.json: name is missing');
  if (typeof m.version !== 'string' || !/^\d+(\.\d+){0,3}$/.test(m.version)) {
    throw new ArchiveError('manifest.json: version must be one to four dot-separated integers, such as 1.0.2');
  }
  const permissions = Array.isArray(m.permissions) ? m.permissions.filter((p): p is string => typeof p === 'string') : [];
  return {
    name: m.name,
    version: m.version,
    manifest_version: 3,
    description: typeof m.description === 'string' ? m.description : '',
    permissions,
  };
}

/** The one folder every entry is in, as 'name/', or undefined. */
function topFolder(names: string[]): string | undefined {
  const tops = new Set(names.map((n) => (n.includes('/') ? n.slice(0, n.indexOf('/') + 1) : n)));
  const [top] = tops;
  return tops.size === 1 && top!.endsWith('/') ? top : undefined;
}
