// The BlobStorage contract, the same assertions against both backends: the file system
// (DATA_DIR's folders) and an S3-compatible bucket (a local s3rver on loopback). Then what
// only S3 has: the start's bucket check, keys under the prefix and area, and a put sent
// again when its connection drops.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.js';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { openBlobAreas, type OpenBlobAreas } from './areas.js';
import type { BlobStorage } from './blobs.js';
import { readRanged } from './ranged.js';
import { s3Client, type S3StorageConfig } from './s3.js';

let s3: LocalS3;
let work: string;
const opened: OpenBlobAreas[] = [];

beforeAll(async () => {
  s3 = await startLocalS3();
  work = mkdtempSync(join(tmpdir(), 'cb-blobs-'));
});

afterAll(async () => {
  for (const o of opened) o.close();
  await s3?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** Both backends, opened as the server opens them: from the configuration. */
const backends: Record<'fs' | 's3', () => Promise<BlobStorage>> = {
  fs: async () => open({ DATA_DIR: join(work, 'data') }),
  s3: async () => open({ DATA_DIR: join(work, 'unused'), ...s3.env('contract') }),
};

async function open(env: Record<string, string>): Promise<BlobStorage> {
  const areas = await openBlobAreas(loadConfig(env));
  opened.push(areas);
  return areas.areas('recordings');
}

let fileCount = 0;
function localFile(bytes: Buffer): string {
  const path = join(work, `upload-${++fileCount}`);
  writeFileSync(path, bytes);
  return path;
}

const text = (s: BlobStorage, key: string, range?: { start: number; end: number }) =>
  s.get(key, range).then(async (r) => (r ? (await buffer(r)).toString() : undefined));

describe.each(Object.keys(backends) as ('fs' | 's3')[])('BlobStorage contract: %s', (backend) => {
  let storage: BlobStorage;
  beforeAll(async () => {
    storage = await backends[backend]();
  });

  it('stores a file under a key (taking the local file) and reads it back whole and by range', async () => {
    const path = localFile(Buffer.from('0123456789abcdef'));
    expect(await storage.put('sess-1/video.mp4', path)).toEqual({ size: 16 });
    expect(existsSync(path)).toBe(false);
    expect(await storage.size('sess-1/video.mp4')).toBe(16);
    expect(await text(storage, 'sess-1/video.mp4')).toBe('0123456789abcdef');
    expect(await text(storage, 'sess-1/video.mp4', { start: 2, end: 5 })).toBe('2345');
    expect(await text(storage, 'sess-1/video.mp4', { start: 15, end: 15 })).toBe('f');
  });

  it('serves Range headers through readRanged: 206, 200, 416', async () => {
    await storage.put('ranged', localFile(Buffer.from('hello world')));
    const part = await readRanged(storage, 'ranged', 'bytes=-5');
    expect(part?.status).toBe(206);
    if (part?.status !== 206) throw new Error('no part');
    expect(part.headers['Content-Range']).toBe('bytes 6-10/11');
    expect(await new Response(part.body).text()).toBe('world');
    const whole = await readRanged(storage, 'ranged', undefined);
    if (whole?.status !== 200) throw new Error('not whole');
    expect(await new Response(whole.body).text()).toBe('hello world');
    expect((await readRanged(storage, 'ranged', 'bytes=11-'))?.status).toBe(416);
    expect(await readRanged(storage, 'absent', undefined)).toBeUndefined();
  });

  it('replaces an object put again under the same key', async () => {
    await storage.put('again', localFile(Buffer.from('first version')));
    await storage.put('again', localFile(Buffer.from('second')));
    expect(await storage.size('again')).toBe(6);
    expect(await text(storage, 'again')).toBe('second');
  });

  it('stores an empty file', async () => {
    expect(await storage.put('empty', localFile(Buffer.alloc(0)))).toEqual({ size: 0 });
    expect(await storage.size('empty')).toBe(0);
    expect(await text(storage, 'empty')).toBe('');
  });

  it('answers undefined for a missing object, and deleting one (twice) is fine', async () => {
    expect(await storage.get('nothing/here')).toBeUndefined();
    expect(await storage.size('nothing/here')).toBeUndefined();
    await storage.put('doomed', localFile(Buffer.from('x')));
    await storage.delete('doomed');
    await storage.delete('doomed');
    expect(await storage.get('doomed')).toBeUndefined();
    expect(await storage.size('doomed')).toBeUndefined();
  });

  it('keeps 2 MB of binary intact', async () => {
    const bytes = Buffer.alloc(2 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919) & 0xff;
    await storage.put('big.bin', localFile(bytes));
    const back = await storage.get('big.bin');
    expect((await buffer(back!)).equals(bytes)).toBe(true);
    const tail = await storage.get('big.bin', { start: bytes.length - 1000, end: bytes.length - 1 });
    expect((await buffer(tail!)).equals(bytes.subarray(bytes.length - 1000))).toBe(true);
  });

  it('refuses a key that climbs out of its area', async () => {
    await expect(storage.put('../escape', localFile(Buffer.from('x')))).rejects.toThrow(/invalid storage key/);
    await expect(storage.delete('../../etc/passwd')).rejects.toThrow(/invalid storage key/);
  });
});

describe('S3 storage', () => {
  it('keeps each area under prefix/area/ in the bucket', async () => {
    const areas = await openBlobAreas(loadConfig({ ...s3.env('team/a') }));
    opened.push(areas);
    await areas.areas('profiles').put('p1/v1.tar', localFile(Buffer.from('profile')));
    await areas.areas('extensions').put('e1.zip', localFile(Buffer.from('zip')));
    const config = loadConfig(s3.env()).storage as S3StorageConfig;
    const client = s3Client(config);
    try {
      const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: 'team/a/' }));
      expect(listed.Contents?.map((o) => o.Key).sort()).toEqual(['team/a/extensions/e1.zip', 'team/a/profiles/p1/v1.tar']);
    } finally {
      client.destroy();
    }
    // One area never reads another's objects.
    expect(await areas.areas('recordings').get('e1.zip')).toBeUndefined();
  });

  it('sends a put again when its connection drops before an answer (a kept-alive socket the server closed as it was reused)', async () => {
    // Between the storage and the bucket, a relay that drops the connection the first PUT
    // comes on, as a server does with a kept-alive socket it has just closed, and passes
    // everything else through.
    const target = new URL(s3.endpoint);
    let dropped = 0;
    const sockets = new Set<Socket>();
    const relay = createNetServer((c) => {
      const up = connect(Number(target.port), target.hostname);
      sockets.add(c).add(up);
      c.on('data', (d: Buffer) => {
        if (dropped === 0 && d.subarray(0, 4).toString() === 'PUT ') {
          dropped++;
          c.destroy();
          up.destroy();
        } else up.write(d);
      });
      c.on('end', () => up.end());
      up.pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    try {
      const areas = await openBlobAreas(loadConfig({ ...s3.env('relayed'), S3_ENDPOINT: `http://127.0.0.1:${(relay.address() as AddressInfo).port}` }));
      opened.push(areas);
      const downloads = areas.areas('downloads');
      const path = localFile(Buffer.from('sent twice'));
      expect(await downloads.put('s1/file', path)).toEqual({ size: 10 });
      expect(dropped).toBe(1);
      expect(existsSync(path)).toBe(false);
      expect(await text(downloads, 's1/file')).toBe('sent twice');
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((r) => relay.close(() => r()));
    }
  });

  it('stops the start when the bucket is missing or refuses the key, naming the bucket and never the secret', async () => {
    await expect(openBlobAreas(loadConfig({ ...s3.env(), STORAGE_URL: 's3://no-such-bucket' }))).rejects.toThrow(
      /STORAGE_URL: the bucket "no-such-bucket" at http:\/\/127\.0\.0\.1:\d+ did not answer: no such bucket/,
    );
    const refused = openBlobAreas(loadConfig({ ...s3.env(), AWS_ACCESS_KEY_ID: 'WRONGKEY', AWS_SECRET_ACCESS_KEY: 'hunter2-secret' }));
    await expect(refused).rejects.toThrow(/did not answer: access denied/);
    await expect(refused).rejects.not.toThrow(/hunter2/);
  });

  it('stops the start quickly when nothing listens at S3_ENDPOINT', async () => {
    const started = Date.now();
    await expect(openBlobAreas(loadConfig({ ...s3.env(), S3_ENDPOINT: 'http://127.0.0.1:9' }))).rejects.toThrow(
      /STORAGE_URL: the bucket "cb-test" at http:\/\/127\.0\.0\.1:9 did not answer/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('STORAGE_URL configuration', () => {
  it('defaults to DATA_DIR (unset or file:)', () => {
    expect(loadConfig({}).storage).toEqual({ kind: 'fs' });
    expect(loadConfig({ STORAGE_URL: 'file:' }).storage).toEqual({ kind: 'fs' });
  });

  it('reads s3://bucket/prefix with its companions; path style by default with an endpoint', () => {
    expect(loadConfig({ STORAGE_URL: 's3://my-bucket/a/b/', S3_ENDPOINT: 'http://minio:9000/' }).storage).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: 'a/b',
      endpoint: 'http://minio:9000',
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: undefined,
    });
    expect(loadConfig({ STORAGE_URL: 's3://my-bucket', S3_REGION: 'eu-west-3' }).storage).toMatchObject({
      prefix: '',
      endpoint: undefined,
      region: 'eu-west-3',
      forcePathStyle: false,
    });
    expect(loadConfig({ STORAGE_URL: 's3://my-bucket', S3_ENDPOINT: 'https://r2.example', S3_FORCE_PATH_STYLE: 'false' }).storage).toMatchObject({
      forcePathStyle: false,
    });
  });

  it('names each bad variable, never echoing a secret', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return '';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(problems({ STORAGE_URL: 's3://Bad_Bucket' })).toContain('STORAGE_URL must be file: or s3://BUCKET');
    expect(problems({ STORAGE_URL: 's3://user:pw@bucket' })).not.toContain('pw@');
    expect(problems({ STORAGE_URL: 's3://bucket/../up' })).toContain('STORAGE_URL');
    expect(problems({ STORAGE_URL: 'gs://bucket' })).toContain('STORAGE_URL');
    expect(problems({ STORAGE_URL: 's3://bucket', S3_ENDPOINT: 'minio:9000' })).toContain('S3_ENDPOINT');
    expect(problems({ STORAGE_URL: 's3://bucket', S3_FORCE_PATH_STYLE: 'sometimes' })).toContain('S3_FORCE_PATH_STYLE');
    expect(problems({ S3_ENDPOINT: 'http://minio:9000' })).toContain('S3_ENDPOINT need STORAGE_URL=s3://');
    const userinfo = problems({ STORAGE_URL: 's3://bucket', S3_ENDPOINT: 'http://admin:hunter2@minio:9000' });
    expect(userinfo).toContain('S3_ENDPOINT must not hold credentials');
    expect(userinfo).not.toContain('hunter2');
    const keys = problems({ STORAGE_URL: 's3://bucket', AWS_SECRET_ACCESS_KEY: 'hunter2-secret' });
    expect(keys).toContain('AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together');
    expect(keys).not.toContain('hunter2');
  });
});
