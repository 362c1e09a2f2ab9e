// Artifacts arrive as bytes over the pipe and are written here, by the server, into the
// caller's directory: the child never gets a writable view of the host's disk.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxArtifact } from './types.js';

const NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export async function writeArtifact(
  dir: string,
  message: { name: string; contentType: string; data: string },
  saved: SandboxArtifact[],
  maxBytes: number,
): Promise<void> {
  if (typeof message.name !== 'string' || !NAME.test(message.name)) throw new Error('bad artifact name');
  if (typeof message.contentType !== 'string' || message.contentType.length > 200) throw new Error('bad content type');
  const bytes = Buffer.from(String(message.data), 'base64');
  const total = saved.filter((a) => a.name !== message.name).reduce((sum, a) => sum + a.size, 0) + bytes.length;
  if (total > maxBytes) throw new Error(`artifacts over ${maxBytes} bytes`);
  const path = join(dir, message.name);
  // Made at the first artifact: most runs save none.
  await mkdir(dir, { recursive: true });
  await writeFile(path, bytes);
  const entry: SandboxArtifact = { name: message.name, path, size: bytes.length, contentType: message.contentType };
  const at = saved.findIndex((a) => a.name === message.name);
  if (at === -1) saved.push(entry);
  else saved[at] = entry;
}
