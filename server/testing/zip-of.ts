// A ZIP archive of a few entries, in memory, for tests that upload one.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ZipFile } from 'yazl';

/** A ZIP of the given entries (name → content), deflated. */
export function zipOf(entries: Record<string, string | Buffer>): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, content] of Object.entries(entries)) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream
      .on('data', (c: Buffer) => chunks.push(c))
      .on('end', () => resolve(Buffer.concat(chunks)))
      .on('error', reject);
  });
}

/** A ZIP of the files directly in a folder (an unpacked extension's, say). */
export function zipOfDir(dir: string): Promise<Buffer> {
  return zipOf(Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f))])));
}
