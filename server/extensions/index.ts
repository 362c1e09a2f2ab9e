// Extensions: the user's own Chromium extensions, uploaded as ZIPs (handlers.ts, checked by
// archive.ts) and loaded into the sessions that name them in `browser.extensions`: the
// session's check refuses an id the project does not have, and its launch unpacks each one
// into the browser's root.
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import type { Capability } from '../capability/index.js';
import type { BlobAreas, BlobStorage } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { unpack } from './archive.js';
import { extensionHandlers, type ExtensionOperation } from './handlers.js';
import { findExtensions } from './store.js';

export function extensions(d: { db: Db; blobs: BlobAreas }): Capability<ExtensionOperation> {
  const storage = d.blobs('extensions');
  return {
    name: 'extensions',
    handlers: extensionHandlers({ db: d.db, storage }),
    sessionHooks: {
      async check(projectId, options) {
        if (options.extensionIds.length === 0) return undefined;
        const found = new Set((await findExtensions(d.db, projectId, options.extensionIds)).map((r) => r.id));
        const unknown = options.extensionIds.find((id) => !found.has(id));
        return unknown ? `Unknown extension: ${unknown}` : undefined;
      },
      async launching(s) {
        if (s.options.extensionIds.length === 0) return undefined;
        const rows = await findExtensions(d.db, s.projectId, s.options.extensionIds);
        const extensionDirs: string[] = [];
        for (const id of s.options.extensionIds) {
          const row = rows.find((r) => r.id === id);
          // Deleted between the check and the launch.
          if (!row) throw new Error(`extension ${id} is gone`);
          const zip = await readBlob(storage, row.storage_key);
          const dir = join(s.rootDir, 'extensions', id);
          // Checked whole at upload: here it is only written out.
          await unpack(zip, row.archive_prefix, dir);
          extensionDirs.push(dir);
        }
        return { extensionDirs };
      },
    },
  };
}

async function readBlob(storage: BlobStorage, key: string): Promise<Buffer> {
  const stream = await storage.get(key);
  if (!stream) throw new Error(`blob ${key} is missing`);
  return buffer(stream);
}
