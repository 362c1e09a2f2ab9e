// The Extensions operations of the contract: upload (checked by archive.ts before it is
// kept), list, get and delete, each within the project.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { components } from '../../generated/types.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { BlobStorage } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { ArchiveError, inspect } from './archive.js';
import * as store from './store.js';

export type ExtensionOperation = 'uploadExtension' | 'listExtensions' | 'getExtension' | 'deleteExtension';

const NOT_FOUND = 'Extension not found';

export function extensionHandlers({ db, storage }: { db: Db; storage: BlobStorage }): Pick<AppHandlers, ExtensionOperation> {
  const resource = (row: store.ExtensionRow): components['schemas']['Extension'] => ({
    id: row.id,
    name: row.name,
    manifest: row.manifest,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  });

  return {
    async uploadExtension(req, ctx) {
      const zip = Buffer.from(await req.body.file.arrayBuffer());
      let inspected;
      try {
        inspected = await inspect(zip);
      } catch (err) {
        if (err instanceof ArchiveError) return fail(400, err.message);
        throw err;
      }
      const id = randomUUID();
      const key = `${ctx.projectId}/${id}.zip`;
      const dir = await mkdtemp(join(tmpdir(), 'cb-extension-'));
      try {
        await writeFile(join(dir, 'extension.zip'), zip);
        await storage.put(key, join(dir, 'extension.zip'));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      try {
        const row = await store.insertExtension(db, {
          id,
          project_id: ctx.projectId,
          name: req.body.name,
          manifest: inspected.manifest,
          storage_key: key,
          archive_prefix: inspected.prefix,
          size_bytes: zip.length,
        });
        return { status: 200, body: { data: resource(row) } };
      } catch (err) {
        await storage.delete(key);
        throw err;
      }
    },

    async listExtensions(_req, ctx) {
      return { status: 200, body: { data: (await store.listExtensions(db, ctx.projectId)).map(resource) } };
    },

    async getExtension(req, ctx) {
      const [row] = await store.findExtensions(db, ctx.projectId, [req.params.id]);
      return row ? { status: 200, body: resource(row) } : fail(404, NOT_FOUND);
    },

    async deleteExtension(req, ctx) {
      const row = await store.deleteExtension(db, ctx.projectId, req.params.id);
      if (!row) return fail(404, NOT_FOUND);
      // Running sessions unpacked their own copies; the stored ZIP is no longer needed.
      await storage.delete(row.storage_key);
      return { status: 200, body: { data: { data: { status: 'deleted' } } } };
    },
  };
}
