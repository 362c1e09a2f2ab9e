// bench/storage: the blob storage backends side by side in one run, on this machine: the
// file system (DATA_DIR, the default and the baseline) and S3 (here a local s3rver on
// loopback, a JavaScript server that writes files: it stands for the protocol's cost, not
// for MinIO's or AWS's speed). Per backend: storing a 20 MB recording, reading it whole,
// and what a player seeking in it does (size + a 256 KB ranged read), p50 and p95.
// Usage: pnpm exec tsx bench/storage.ts [--rounds 40]
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../server/config/config.js';
import { openBlobAreas } from '../server/storage/areas.js';
import type { BlobStorage } from '../server/storage/blobs.js';
import { startLocalS3 } from '../server/testing/s3-server.js';
import { machine, ms, percentile } from './machine.js';

const N = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 40;
const MB = 1024 * 1024;
const SIZE = 20 * MB;
const RANGE = 256 * 1024;

const work = mkdtempSync(join(tmpdir(), 'cb-bench-storage-'));
const s3 = await startLocalS3('bench');
const data = randomBytes(SIZE);
const fs = await openBlobAreas(loadConfig({ DATA_DIR: join(work, 'data') }));
const remote = await openBlobAreas(loadConfig({ DATA_DIR: join(work, 'data'), ...s3.env('bench') }));
const backends: [string, BlobStorage][] = [
  ['file system', fs.areas('recordings')],
  ['s3 (s3rver)', remote.areas('recordings')],
];

async function drain(s: NodeJS.ReadableStream | undefined): Promise<number> {
  if (!s) throw new Error('missing object');
  let n = 0;
  for await (const chunk of s) n += (chunk as Buffer).length;
  return n;
}

const times: Record<string, { put: number[]; whole: number[]; seek: number[] }> = {};
for (const [name] of backends) times[name] = { put: [], whole: [], seek: [] };
const rounds = Math.max(3, Math.floor(N / 8));
try {
  // Taking turns, so the machine's load falls on both alike.
  for (let i = 0; i < rounds; i++) {
    for (const [name, storage] of backends) {
      const file = join(work, `upload-${i}`);
      writeFileSync(file, data);
      let t = performance.now();
      await storage.put(`s/${i}.mp4`, file);
      times[name]!.put.push(performance.now() - t);
      t = performance.now();
      if ((await drain(await storage.get(`s/${i}.mp4`))) !== SIZE) throw new Error('short read');
      times[name]!.whole.push(performance.now() - t);
    }
  }
  for (let i = 0; i < N; i++) {
    const start = Math.floor(Math.random() * (SIZE - RANGE));
    for (const [name, storage] of backends) {
      const t = performance.now();
      await storage.size('s/0.mp4');
      if ((await drain(await storage.get('s/0.mp4', { start, end: start + RANGE - 1 }))) !== RANGE) throw new Error('short range');
      times[name]!.seek.push(performance.now() - t);
    }
  }
  console.log(
    `machine: ${machine()}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(`${rounds} rounds of a 20 MB put and whole read, ${N} seeks (size + 256 KB range), each backend in turn`);
  for (const [name] of backends) {
    const t = times[name]!;
    const line = (label: string, v: number[]) => `${label} p50 ${ms(percentile(v, 50))} p95 ${ms(percentile(v, 95))}`;
    console.log(`  ${name.padEnd(12)} ${line('put 20 MB', t.put)} | ${line('read 20 MB', t.whole)} | ${line('seek', t.seek)}`);
  }
} finally {
  fs.close();
  remote.close();
  await s3.stop();
  rmSync(work, { recursive: true, force: true });
}
