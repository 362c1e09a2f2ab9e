// File names that come from outside (a page's download, an uploaded part) made safe to
// write into a folder and to hand back: one path segment, printable, not hidden, bounded.
import { extname } from 'node:path';
import { getMimeType } from 'hono/utils/mime';

/** Longest name in UTF-8 bytes: file systems allow 255, and a " (12)" may be added. */
const MAX_NAME_BYTES = 200;

/**
 * The name's last path segment (either separator: a browser on Windows may send
 * `C:\Users\me\cv.pdf`), without control characters, leading dots or surrounding spaces, cut
 * to MAX_NAME_BYTES keeping its extension; `fallback` when nothing is left.
 */
export function safeFileName(raw: string, fallback: string): string {
  let name = (raw.split(/[\\/]/).pop() ?? '')
    .normalize('NFC')
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .trim()
    .replace(/^\.+/, '')
    .trim();
  if (!name) return fallback;
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) {
    const ext = extname(name);
    const keep = Buffer.byteLength(ext) <= 20 ? ext : '';
    name = cut(name.slice(0, name.length - keep.length), MAX_NAME_BYTES - Buffer.byteLength(keep)) + keep;
  }
  return name;
}

/** The longest prefix of `s` within `bytes` UTF-8 bytes, never splitting a character. */
function cut(s: string, bytes: number): string {
  let out = '';
  for (const ch of s) {
    if (Buffer.byteLength(out + ch) > bytes) break;
    out += ch;
  }
  return out;
}

/** `name`, or `base (1).ext`, `base (2).ext`… : the first that `taken` does not hold. */
export function uniqueName(name: string, taken: ReadonlySet<string>): string {
  if (!taken.has(name)) return name;
  const ext = extname(name);
  const base = name.slice(0, name.length - ext.length);
  for (let i = 1; ; i++) {
    const candidate = `${base} (${i})${ext}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The content type a file name's extension suggests. */
export function contentTypeOf(name: string): string {
  return getMimeType(name) ?? 'application/octet-stream';
}
