// The Files operations of the contract: a session's kept downloads (list, fetch one, delete
// one) and uploads into its browser.
import type { components } from '../../generated/types.js';
import { attachmentHeader } from '../http/attachment.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { SessionLookup } from '../sessions/index.js';
import type { BlobStorage } from '../storage/blobs.js';
import { readRanged } from '../storage/ranged.js';
import type { Db } from '../store/db.js';
import { contentTypeOf } from '../storage/file-names.js';
import type { Uploads } from './uploads.js';
import * as store from './store.js';

export type SessionFileOperation = 'listSessionDownloads' | 'fetchSessionDownload' | 'deleteSessionDownload' | 'uploadSessionFile';

export interface SessionFileDeps {
  db: Db;
  storage: BlobStorage;
  sessions: SessionLookup;
  uploads: Uploads;
  publicUrl: string;
}

const NO_SESSION = 'Session not found';
const NO_DOWNLOAD = 'Download not found';

export function sessionFileHandlers(d: SessionFileDeps): Pick<AppHandlers, SessionFileOperation> {
  const { db } = d;
  const item = (r: store.DownloadRow): components['schemas']['Download'] => ({
    id: r.id,
    file_link: `${d.publicUrl}/v1/sessions/${r.session_id}/downloads/${r.id}`,
    ...(r.url ? { original_download_url: r.url } : {}),
    ...(r.origin_url ? { origin_url: r.origin_url } : {}),
    suggested_file_name: r.file_name,
    original_file_name: r.original_file_name,
    duration: r.duration_ms,
    size: r.size_bytes,
    created_at: r.created_at.toISOString(),
  });

  return {
    async listSessionDownloads(req, ctx) {
      const sessionId = req.params.session_id;
      if (!(await store.hasSession(db, ctx.projectId, sessionId))) return fail(404, NO_SESSION);
      const items = (await store.listDownloads(db, ctx.projectId, sessionId)).map(item);
      return { status: 200, body: { data: { count: items.length, items } } };
    },

    async fetchSessionDownload(req, ctx) {
      const { session_id: sessionId, download_id: id } = req.params;
      if (!(await store.hasSession(db, ctx.projectId, sessionId))) return fail(404, NO_SESSION);
      const row = await store.findDownload(db, ctx.projectId, sessionId, id);
      const out = row && (await readRanged(d.storage, row.storage_key, req.headers.get('range')));
      if (!row || !out) return fail(404, NO_DOWNLOAD);
      if (out.status === 416) return { ...fail(416, 'Range not satisfiable'), headers: { 'Content-Range': `bytes */${out.size}` } };
      const file = { 'Content-Disposition': attachmentHeader(row.file_name), 'Cache-Control': 'private, no-store' };
      const contentType = contentTypeOf(row.file_name);
      if (out.status === 206) return { status: 206, contentType, body: out.body, headers: Object.assign(out.headers, file) };
      return { status: 200, contentType, body: out.body, headers: Object.assign(out.headers, file) };
    },

    async deleteSessionDownload(req, ctx) {
      const { session_id: sessionId, download_id: id } = req.params;
      if (!(await store.hasSession(db, ctx.projectId, sessionId))) return fail(404, NO_SESSION);
      // The row first: once it is gone nothing hands out the file, then the file goes.
      const row = await store.deleteDownload(db, ctx.projectId, sessionId, id);
      if (!row) return fail(404, NO_DOWNLOAD);
      await d.storage.delete(row.storage_key);
      return { status: 200, body: { data: { status: 'deleted' } } };
    },

    async uploadSessionFile(req, ctx) {
      const found = await d.sessions.lookup(ctx.projectId, req.params.sessionId);
      if ('status' in found) return fail(found.status, found.message);
      let result;
      try {
        result = await d.uploads.put(found, req.body.file);
      } catch (err) {
        // The session ended while the file was written: its root is gone.
        if (!d.sessions.get(found.id)) return fail(409, 'Session is not running');
        throw err;
      }
      if (!result.ok) return fail(413, result.message);
      const { path, name, size } = result;
      return { status: 200, body: { data: { status: 'uploaded', message: `File uploaded to ${path}`, path, name, size } } };
    },
  };
}
