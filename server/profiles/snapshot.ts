// What a profile keeps of a browser's user-data directory, and how it is packed. Kept: what
// "stay signed in" needs (cookies, session cookies included, local and session storage,
// IndexedDB, service workers and their caches, the HTTP cache, site permissions and other
// preferences). Left out: what would break the next start or belongs to one machine or one
// run: lock files, crash reports, GPU, shader and code caches (rebuilt on demand, and tied
// to the GPU and the Chromium build), component downloads, and the open tabs (Sessions: a
// profile restores state, not windows).
import { unzip, zipDirectory, type ZipSource } from '../storage/zip.js';

/** Entries of user-data/ left out. */
const TOP_LEVEL = new Set([
  'SingletonLock',
  'SingletonSocket',
  'SingletonCookie',
  'DevToolsActivePort',
  'Crashpad',
  'Crash Reports',
  'BrowserMetrics',
  'BrowserMetrics-spare.pma',
  'GrShaderCache',
  'GraphiteDawnCache',
  'ShaderCache',
  'component_crx_cache',
  'extensions_crx_cache',
  'optimization_guide_model_store',
  'segmentation_platform',
  'Safe Browsing',
]);

/** Entries of a browser profile folder (user-data/Default) left out. */
const IN_PROFILE = new Set(['Sessions', 'Sessions_Encrypted', 'GPUCache', 'Code Cache', 'DawnGraphiteCache', 'DawnWebGPUCache', 'blob_storage']);

/** Whether a path of user-data/ (relative, with `/`) stays out of the profile. */
export function leftOut(path: string): boolean {
  const parts = path.split('/');
  if (parts.length === 1) return TOP_LEVEL.has(parts[0]!);
  return parts.length === 2 && IN_PROFILE.has(parts[1]!);
}

/**
 * Level 1: a profile is mostly SQLite and LevelDB files and cached responses that are
 * already compressed; higher levels cost several times the CPU for a few percent
 * (bench/profile-start reports the save time and size).
 */
const LEVEL = 1;

/** Packs a closed browser's user-data directory into the file `out`. */
export function pack(userDataDir: string, out: string): Promise<number> {
  return zipDirectory(userDataDir, out, { skip: leftOut, level: LEVEL });
}

/** Unpacks a saved profile into a new browser's (empty) user-data directory. */
export function unpack(source: ZipSource, userDataDir: string): Promise<void> {
  return unzip(source, userDataDir);
}
