// Artifacts a run saved: moved into the blob storage area `task-artifacts` once the run
// ends, and handed out as signed, short-lived links (an hour or two, as recordings' are)
// served outside /v1, so a webhook receiver can download them without a key.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Hono } from 'hono';
import type { Db } from '../store/db.js';
import type { Secrets } from '../secrets/index.js';
import type { BlobStorage } from '../storage/blobs.js';
import { LinkSigner } from '../storage/signed-links.js';
import type { components } from '../../generated/types.js';
import * as queue from './queue-store.js';

type TaskArtifact = components['schemas']['TaskArtifact'];

/** A file the sandbox wrote for ctx.artifacts.save. */
export interface SavedArtifact {
  name: string;
  path: string;
  size: number;
  contentType: string;
}

const LINK_PATH = /^[0-9a-f-]{36}$/;

export class ArtifactLinks {
  private readonly signer: LinkSigner;

  constructor(
    private readonly db: Db,
    private readonly storage: BlobStorage,
    private readonly publicUrl: string,
    secrets: Secrets,
  ) {
    this.signer = new LinkSigner(secrets.derive('task artifact links'), 'artifact.');
  }

  /** Stores the run's files (moved, not copied) and records them. */
  async keep(execution: { id: string; project_id: string }, files: readonly SavedArtifact[]): Promise<void> {
    for (const f of files) {
      const id = randomUUID();
      const key = `${execution.id}/${id}`;
      const { size } = await this.storage.put(key, f.path);
      await queue.addArtifact(this.db, {
        id,
        project_id: execution.project_id,
        execution_id: execution.id,
        name: f.name,
        storage_key: key,
        size_bytes: size,
        content_type: f.contentType,
      });
    }
  }

  /** The execution's artifacts as events carry them, with fresh links. */
  async list(executionId: string): Promise<TaskArtifact[]> {
    const rows = await queue.artifactsOf(this.db, executionId);
    return rows.map((r) => ({ name: r.name, url: this.url(r.id, r.name), size: Number(r.size_bytes), content_type: r.content_type }));
  }

  url(id: string, name: string): string {
    return `${this.publicUrl}/files/task-artifacts/${id}?${this.signer.query(id)}&name=${encodeURIComponent(name)}`;
  }

  verify(id: string, expires: string | undefined, signature: string | undefined): boolean {
    return this.signer.verify(id, expires, signature);
  }

  /** GET /files/task-artifacts/{id}?expires&signature: the file, as saved. */
  route(app: Hono): void {
    app.get('/files/task-artifacts/:id', async (c) => {
      const id = c.req.param('id');
      const plain = (status: 403 | 404, message: string) => c.json({ error: { code: status, message } }, status);
      if (!LINK_PATH.test(id)) return plain(404, 'Not found');
      if (!this.verify(id, c.req.query('expires'), c.req.query('signature'))) return plain(403, 'This link is not valid or has expired');
      const row = await queue.artifactById(this.db, id);
      const body = row && (await this.storage.get(row.storage_key));
      if (!row || !body) return plain(404, 'Artifact not found');
      return new Response(Readable.toWeb(body) as ReadableStream<Uint8Array>, {
        status: 200,
        headers: {
          'content-type': row.content_type,
          'content-length': String(row.size_bytes),
          'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(row.name)}`,
          'cache-control': 'private, no-store',
        },
      });
    });
  }
}
