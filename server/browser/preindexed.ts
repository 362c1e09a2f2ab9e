// An extension with declarativeNetRequest rules (the ad-block), indexed once and then only
// read. Loaded with --load-extension, Chromium parses and indexes every JSON rule on its UI
// thread before the browser is up, at every launch: EasyList and EasyPrivacy's 12,600 rules
// cost a launch ~330 ms and ~0.35 CPU-s (measured on this project's 2-core machine, 2026-12-07:
// a headless launch to its first screenshot 940-968 ms against 581-635 ms without the
// extension; an extension whose rulesets are empty costs nothing). An extension that a
// profile's preferences list as installed (unpacked, developer mode on) is loaded from its
// indexed rulesets instead, when their checksums match what the preferences say: the same
// launch took 617-634 ms, with the same requests blocked.
//
// So one Chromium, headless and never on the network, loads the extension once from a copy
// of its own and is closed gracefully; the copy (with its indexed rulesets) and the entry
// Chromium wrote for it in its Preferences are kept, keyed by the Chromium binary and the
// extension, in the temporary directory beside the browsers' roots, for every server
// process of the machine and user. Browsers read it (0755/0644) and never write it. Chromium's
// index format can change with its version, and then it would index again into a folder it
// cannot write: the key changes with the binary, so a new Chromium gets its own copy.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, cp, lstat, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NOWHERE, QUIET_SWITCHES } from './flags.js';

export interface Preindexed {
  /** The extension's folder, its indexed rulesets in it. */
  dir: string;
  /** Its entry in a profile's `extensions.settings`, as Chromium wrote it, pointing at `dir`. */
  settings: Record<string, unknown>;
}

/** Chromium's ManifestLocation::kUnpacked: loaded from `path` at every start (developer mode). */
const UNPACKED = 4;
const SETTINGS = 'settings.json';
const WORK = 'cb-preindexing-';
/** A work folder this old was left by a process that died while indexing (it takes a second). */
const ABANDONED_MS = 10 * 60_000;

/**
 * The indexed copy of the extension at `source` for the Chromium at `chromiumPath`: found,
 * or made (one headless launch, about a second). Rejects when it cannot be made; the caller
 * then loads the extension as before.
 */
export async function preindexed(
  source: string,
  id: string,
  rulesets: number,
  chromiumPath: string,
  o: { parent?: string; timeoutMs?: number } = {},
): Promise<Preindexed> {
  const parent = o.parent ?? tmpdir();
  const dir = join(parent, `cb-preindexed-${await keyOf(source, chromiumPath)}`);
  const found = await readMade(dir);
  if (found) return found;
  await removeAbandoned(parent);
  const work = await mkdtemp(join(parent, WORK));
  try {
    const ext = join(work, 'ext');
    await cp(source, ext, { recursive: true });
    const profile = join(work, 'profile');
    await indexIn(chromiumPath, ext, profile, o.timeoutMs);
    const prefs = JSON.parse(await readFile(join(profile, 'Default', 'Preferences'), 'utf8')) as {
      extensions?: { settings?: Record<string, { dnr_static_ruleset?: Record<string, { checksum?: number }> }> };
    };
    const entry = prefs.extensions?.settings?.[id];
    const sums = Object.values(entry?.dnr_static_ruleset ?? {}).filter((r) => typeof r.checksum === 'number');
    if (!entry || sums.length !== rulesets) throw new Error(`Chromium indexed ${sums.length} of the ${rulesets} rulesets`);
    await rm(profile, { recursive: true, force: true });
    await writeFile(join(work, SETTINGS), JSON.stringify({ ...entry, location: UNPACKED, path: join(dir, 'ext') }));
    await readableByAll(work);
    try {
      await rename(work, dir);
    } catch (err) {
      // Another server process made it first: take theirs, if it is sound.
      if ((err as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const made = await readMade(dir);
    if (!made) throw new Error(`${dir} is not this user's, or is writable by others`);
    return made;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The Chromium binary (its package's files change with its version) and the extension's files. */
async function keyOf(source: string, chromiumPath: string): Promise<string> {
  const hash = createHash('sha256');
  const binary = realpathSync(chromiumPath);
  const s = await stat(binary);
  hash.update(`${binary}\0${s.size}\0${s.mtimeMs}\0${process.getuid?.() ?? ''}\0`);
  for (const name of (await readdir(source, { recursive: true })).sort()) {
    const f = await stat(join(source, name));
    if (f.isFile()) hash.update(`${name}\0${f.size}\0${f.mtimeMs}\0`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** A copy made by this user (no one else could have put a different one there) and written by no one else. */
async function readMade(dir: string): Promise<Preindexed | undefined> {
  const s = await lstat(dir).catch(() => undefined);
  if (!s?.isDirectory() || s.uid !== (process.getuid?.() ?? s.uid) || (s.mode & 0o022) !== 0) return undefined;
  try {
    const settings = JSON.parse(await readFile(join(dir, SETTINGS), 'utf8')) as Record<string, unknown>;
    return { dir: join(dir, 'ext'), settings };
  } catch {
    return undefined; // half made by a process that died: made again, under another name
  }
}

async function removeAbandoned(parent: string): Promise<void> {
  for (const name of await readdir(parent)) {
    if (!name.startsWith(WORK)) continue;
    const s = await lstat(join(parent, name)).catch(() => undefined);
    if (s?.isDirectory() && s.uid === process.getuid?.() && Date.now() - s.mtimeMs > ABANDONED_MS) {
      await rm(join(parent, name), { recursive: true, force: true });
    }
  }
}

async function readableByAll(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    await chmod(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o755 : 0o644);
  }
}

/**
 * One headless Chromium loads the extension and closes when asked over its pipe, writing its
 * Preferences as it goes: no page but about:blank, no network (no proxy answers at port 9), as
 * this user (it only ever shows about:blank, so without its sandbox, which root needs).
 */
function indexIn(chromiumPath: string, ext: string, profile: string, timeoutMs = 30_000): Promise<void> {
  const child = spawn(
    chromiumPath,
    [
      '--headless=new',
      '--no-sandbox',
      '--remote-debugging-pipe',
      `--user-data-dir=${profile}`,
      `--load-extension=${ext}`,
      `--disable-extensions-except=${ext}`,
      '--disable-features=DisableLoadExtensionCommandLineSwitch',
      ...QUIET_SWITCHES,
      `--proxy-server=${NOWHERE}`,
      '--disable-breakpad',
      'about:blank',
    ],
    { detached: true, stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: { ...process.env, HOME: profile } },
  );
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`Chromium did not index the rules within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    };
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2_000)));
    const input = child.stdio[3] as NodeJS.WritableStream;
    const output = child.stdio[4] as NodeJS.ReadableStream;
    input.on('error', () => {}); // a Chromium that died is reported by its exit
    // An answer means the browser is up, its profile (and the extension) loaded; then close.
    let answered = '';
    output.on('data', (d: Buffer) => {
      answered += d.toString();
      if (answered.includes('"id":1')) {
        answered = '';
        input.write(`${JSON.stringify({ id: 2, method: 'Browser.close' })}\0`);
      }
    });
    input.write(`${JSON.stringify({ id: 1, method: 'Browser.getVersion' })}\0`);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`Chromium exited (code ${code}, signal ${signal}) while indexing: ${stderr.trim().split('\n').slice(-3).join(' ')}`));
    });
  });
}
