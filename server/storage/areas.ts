// The one place that picks where finished files live, from STORAGE_URL: DATA_DIR's folders
// (the default, one node) or an S3-compatible bucket shared by every node. Capabilities
// receive only the BlobAreas and never learn which.
import type { Config } from '../config/config.js';
import { fsBlobAreas, type BlobAreas } from './blobs.js';
import { checkBucket, S3BlobStorage, s3Client } from './s3.js';

export interface OpenBlobAreas {
  areas: BlobAreas;
  /** What the areas' storage is, for the start's log line (never credentials). */
  describe: string;
  close(): void;
}

/** Opens the configured storage; an S3 bucket that does not answer stops the start here. */
export async function openBlobAreas(config: Pick<Config, 'dataDir' | 'storage'>): Promise<OpenBlobAreas> {
  const c = config.storage;
  if (c.kind === 'fs') return { areas: fsBlobAreas(config.dataDir), describe: `file: ${config.dataDir}`, close: () => {} };
  const client = s3Client(c);
  try {
    await checkBucket(client, c);
  } catch (err) {
    client.destroy();
    throw err;
  }
  const base = c.prefix ? `${c.prefix}/` : '';
  return {
    areas: (area) => new S3BlobStorage(client, c.bucket, `${base}${area}/`),
    describe: `s3://${c.bucket}/${c.prefix}${c.endpoint ? ` at ${c.endpoint}` : ''}`,
    close: () => client.destroy(),
  };
}
