// Finished files in an S3-compatible bucket (AWS S3, MinIO, Ceph, R2...), so that every node
// of a cluster reads what any node stored. One object a key, under `prefix/area/`; a
// ranged read is a GetObject with a Range header, so a player seeking in a recording
// fetches only the bytes it shows.
import { createReadStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import type { StorageConfig } from '../config/config.js';
import type { BlobStorage, ByteRange } from './blobs.js';

/** Connections to the bucket at once, per node. */
export const S3_MAX_SOCKETS = 128;

export type S3StorageConfig = Extract<StorageConfig, { kind: 's3' }>;

export function s3Client(c: S3StorageConfig): S3Client {
  return new S3Client({
    region: c.region,
    endpoint: c.endpoint,
    forcePathStyle: c.forcePathStyle,
    credentials: c.credentials,
    // Checksums only where S3 requires them: since 3.729 the SDK otherwise sends bodies
    // aws-chunked with a trailing CRC, which many S3-compatible servers store as is or
    // refuse. Integrity still holds: ContentLength is checked by every server.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // An endpoint that does not answer fails a request in seconds, not at the OS's
    // connect timeout; no socket timeout, as a read may wait on a slow client's download.
    // A read holds its socket until its client has it all: more sockets than the SDK's 50,
    // so that slow viewers of recordings do not hold up the storing of new files.
    requestHandler: {
      connectionTimeout: 5_000,
      httpAgent: { keepAlive: true, maxSockets: S3_MAX_SOCKETS },
      httpsAgent: { keepAlive: true, maxSockets: S3_MAX_SOCKETS },
    },
  });
}

/** Fails with a message naming the bucket and what it answered, when the bucket cannot be reached. */
export async function checkBucket(client: S3Client, c: S3StorageConfig): Promise<void> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: c.bucket }));
  } catch (err) {
    const status = (err as S3ServiceException).$metadata?.httpStatusCode;
    const why =
      status === 404
        ? 'no such bucket'
        : status === 403
          ? 'access denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)'
          : (err as Error).name || (err as Error).message;
    throw new Error(
      `STORAGE_URL: the bucket ${JSON.stringify(c.bucket)} at ${c.endpoint ?? `AWS S3 (${c.region})`} did not answer: ${why}${status ? ` (HTTP ${status})` : ''}`,
    );
  }
}

export class S3BlobStorage implements BlobStorage {
  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    /** Keys' common start, ending with a slash: `prefix/area/`. */
    private readonly keyPrefix: string,
  ) {}

  async put(key: string, path: string): Promise<{ size: number }> {
    const Key = this.objectKey(key);
    const { size } = await stat(path);
    // One PutObject, streamed with its length: S3 takes up to 5 GB this way, above the
    // largest session download (SESSION_DOWNLOADS_MAX_BYTES) and any recording we make.
    // A kept-alive connection the bucket's server closed as it was reused (its idle time-out
    // and our next request crossing) drops the request before any answer; the SDK retries no
    // streamed body ("non-retryable streaming request"), so the file is sent again here, from
    // a new stream.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: createReadStream(path), ContentLength: size }));
        break;
      } catch (err) {
        if (attempt >= PUT_ATTEMPTS || !isDroppedConnection(err)) throw err;
      }
    }
    // As the file system's put moves the file, the local copy goes once stored.
    await rm(path, { force: true });
    return { size };
  }

  async get(key: string, range?: ByteRange): Promise<Readable | undefined> {
    const Key = this.objectKey(key);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key, Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
      // In Node the body is the response's IncomingMessage: destroying it frees the socket.
      return out.Body as Readable;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async size(key: string): Promise<number | undefined> {
    const Key = this.objectKey(key);
    try {
      return (await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }))).ContentLength;
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.objectKey(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key }));
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
  }

  /** The object key; keys are relative paths, refused as the file system refuses them. */
  private objectKey(key: string): string {
    if (key.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) throw new Error(`invalid storage key: ${key}`);
    return this.keyPrefix + key;
  }
}

/** Tries of one put whose connection dropped before an answer. */
const PUT_ATTEMPTS = 3;

/** The connection went before the bucket answered: nothing was stored, the put can be sent again. */
function isDroppedConnection(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return !(err instanceof S3ServiceException) && (code === 'ECONNRESET' || code === 'EPIPE');
}

function isMissing(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchKey' || err.name === 'NotFound' || err.$metadata?.httpStatusCode === 404);
}
