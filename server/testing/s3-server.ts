// A local S3-compatible server for tests (s3rver, on npm): real HTTP speaking the S3 API on
// an ephemeral loopback port, its objects in a temporary folder removed at stop.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import type { VariableName } from '../config/config.js';

export interface LocalS3 {
  endpoint: string;
  bucket: string;
  /** The server's environment for STORAGE_URL=s3://bucket/prefix against this server. */
  env(prefix?: string): Partial<Record<VariableName, string>>;
  stop(): Promise<void>;
}

/** s3rver's one built-in account; it checks the key id, not V4 signatures. */
export const LOCAL_S3_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export async function startLocalS3(bucket = 'cb-test'): Promise<LocalS3> {
  const directory = mkdtempSync(join(tmpdir(), 'cb-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory, silent: true, configureBuckets: [{ name: bucket }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    env: (prefix) => ({
      STORAGE_URL: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
      S3_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: LOCAL_S3_KEY.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_S3_KEY.secretAccessKey,
    }),
    async stop() {
      await server.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}
