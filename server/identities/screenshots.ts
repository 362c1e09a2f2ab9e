// The page an identity's last login could not read (`failure_reason: unknown_page`), kept as
// a PNG in blob storage (area `login-screenshots`), one an identity: a newer one replaces it,
// and it goes with the identity's saved state (new credentials, the identity deleted).
import { randomUUID } from 'node:crypto';
import { unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BlobStorage } from '../storage/blobs.js';

export class LoginScreenshots {
  constructor(private readonly storage: BlobStorage) {}

  private key = (projectId: string, identityId: string) => `${projectId}/${identityId}.png`;

  async keep(projectId: string, identityId: string, png: Buffer): Promise<void> {
    const file = join(tmpdir(), `login-screenshot-${randomUUID()}.png`);
    try {
      await writeFile(file, png);
      await this.storage.put(this.key(projectId, identityId), file);
    } finally {
      // put may have moved it.
      await unlink(file).catch(() => {});
    }
  }

  /** The PNG (small: read whole), or undefined. */
  async read(projectId: string, identityId: string): Promise<Buffer | undefined> {
    const stream = await this.storage.get(this.key(projectId, identityId));
    if (!stream) return undefined;
    const parts: Buffer[] = [];
    for await (const part of stream) parts.push(part as Buffer);
    return Buffer.concat(parts);
  }

  forget(projectId: string, identityId: string): Promise<void> {
    return this.storage.delete(this.key(projectId, identityId));
  }
}
