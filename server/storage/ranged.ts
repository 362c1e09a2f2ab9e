// Reading a stored file for a Range header, as the contract states it for recordings and
// downloads: one byte range (`bytes=START-END`, `bytes=START-`, `bytes=-SUFFIX`) answers 206
// with that part, a range outside the file 416, and anything else (several ranges, another
// unit, garbage) is ignored: the whole file, 200.
import { Readable } from 'node:stream';
import type { BlobStorage, ByteRange } from './blobs.js';

export type RangeResult = { kind: 'whole' } | { kind: 'part'; range: ByteRange } | { kind: 'unsatisfiable' };

export function parseRange(header: string | null | undefined, size: number): RangeResult {
  if (!header) return { kind: 'whole' };
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m || (m[1] === '' && m[2] === '')) return { kind: 'whole' };
  if (m[1] === '') {
    // The last SUFFIX bytes.
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return { kind: 'unsatisfiable' };
    return { kind: 'part', range: { start: Math.max(0, size - suffix), end: size - 1 } };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Number(m[2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end)) return { kind: 'unsatisfiable' };
  if (m[2] !== '' && end < start) return { kind: 'whole' };
  if (start >= size) return { kind: 'unsatisfiable' };
  return { kind: 'part', range: { start, end: Math.min(end, size - 1) } };
}

export type RangedRead =
  | { status: 200; body: ReadableStream<Uint8Array>; headers: { 'Accept-Ranges': 'bytes'; 'Content-Length': string } }
  | { status: 206; body: ReadableStream<Uint8Array>; headers: { 'Accept-Ranges': 'bytes'; 'Content-Length': string; 'Content-Range': string } }
  | { status: 416; size: number };

/** The stored file's body and headers for a Range header; undefined when the file is missing. */
export async function readRanged(storage: BlobStorage, key: string, rangeHeader: string | null | undefined): Promise<RangedRead | undefined> {
  const size = await storage.size(key);
  if (size === undefined) return undefined;
  const r = parseRange(rangeHeader, size);
  if (r.kind === 'unsatisfiable') return { status: 416, size };
  const range = r.kind === 'part' ? r.range : undefined;
  const stream = await storage.get(key, range);
  if (!stream) return undefined;
  const body = Readable.toWeb(stream) as ReadableStream<Uint8Array>;
  if (range) {
    return {
      status: 206,
      body,
      headers: {
        'Accept-Ranges': 'bytes',
        'Content-Length': String(range.end - range.start + 1),
        'Content-Range': `bytes ${range.start}-${range.end}/${size}`,
      },
    };
  }
  return { status: 200, body, headers: { 'Accept-Ranges': 'bytes', 'Content-Length': String(size) } };
}
