// Profiles in sessions: a session named with `browser.profile` starts from the saved state
// (unpacked into its own root at launch), and a session whose state is to be kept (a
// pending profile made from it, or `persist: true`) has its browser closed gracefully at
// its end, so Chromium flushes cookies, storage and caches to disk, and its user-data
// directory saved.
//
// The end is split in two so that it costs the session's end as little as possible:
// `ending` (the browser still up) closes it and moves user-data/ out of the root in one
// rename, before the root is removed; `ended` (after the end's answer; the server's
// shutdown waits for it) packs it and switches the profile to the new object.
import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { copyFile, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import { rootPaths, within, type BrowserExit } from '../browser/index.js';
import type { LaunchAddition, LaunchingSession, LeftNode, RunningSession, SessionHooks, SessionOptions } from '../capability/index.js';
import type { BlobStorage } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { pack, unpack } from './snapshot.js';
import * as store from './store.js';
import type { UnpackedProfiles } from './unpacked.js';

/** How long a browser may take to close gracefully before its state is given up. */
const CLOSE_WAIT_MS = 15_000;
/** Staged user-data folders sit beside the roots (same file system: a rename). */
const STAGED_PREFIX = '.profile-save-';

interface Target {
  id: string;
  name: string;
}

type Staged = { targets: Target[]; dir: string } | { targets: Target[]; failure: string };

export class ProfileKeeper implements SessionHooks {
  /** Existing profiles a session's state is saved into, by session id. */
  private readonly persisting = new Map<string, Target[]>();
  /** What `ending` left for `ended`, by session id. */
  private readonly staged = new Map<string, Staged>();

  constructor(private readonly d: { db: Db; log: Logger; storage: BlobStorage; unpacked: UnpackedProfiles; browsersDir: string; nodeId: string }) {}

  /** A killed predecessor's staged folders go, and the profiles they were for fail. */
  async start(): Promise<void> {
    await this.d.unpacked.reset();
    const entries = await readdir(this.d.browsersDir).catch(() => [] as string[]);
    for (const name of entries.filter((n) => n.startsWith(STAGED_PREFIX))) {
      await rm(join(this.d.browsersDir, name), { recursive: true, force: true });
    }
    const failed = await store.failOrphans(this.d.db, this.d.nodeId, "The server stopped before the session's state was saved");
    if (failed > 0) this.d.log.warn({ profiles: failed }, 'profiles left pending by a previous run failed');
  }

  /** Another node died: the profiles its ended sessions were to save fail (the state was on its disk). */
  async recoverNode(node: LeftNode): Promise<void> {
    const failed = await store.failOrphans(this.d.db, node.id, 'The node running the session stopped before its state was saved', node.before);
    if (failed > 0) this.d.log.warn({ profiles: failed, nodeId: node.id }, 'profiles left pending by a dead node failed');
  }

  async check(projectId: string, options: SessionOptions): Promise<string | undefined> {
    const wanted = options.profile;
    if (!wanted) return undefined;
    const row = await store.getProfile(this.d.db, projectId, wanted.name);
    if (!row) return wanted.persist ? undefined : `Unknown profile: ${wanted.name}`;
    if (row.status === 'pending') return `Profile ${wanted.name} is pending: it is saved when the session it is made from ends`;
    if (row.status === 'failed') return `Profile ${wanted.name} failed and holds no state: ${row.failure_reason ?? 'unknown reason'}`;
    return undefined;
  }

  async stickyProxy(projectId: string, options: SessionOptions): Promise<string | undefined> {
    if (!options.profile) return undefined;
    const row = await store.getProfile(this.d.db, projectId, options.profile.name);
    return row?.dedicated_sticky_ip ? (row.sticky_proxy_id ?? undefined) : undefined;
  }

  async launching(s: LaunchingSession): Promise<LaunchAddition | undefined> {
    const wanted = s.options.profile;
    if (!wanted) return undefined;
    const row = await store.getProfile(this.d.db, s.projectId, wanted.name);
    // A new name with persist: the profile is made when the session is running.
    if (!row && wanted.persist) return undefined;
    // Created empty and never saved into: nothing to load, the browser starts fresh.
    if (row?.status === 'ready' && row.storage_key === null) return undefined;
    if (!(await this.load(s, wanted.name))) throw new Error(`profile ${wanted.name} is no longer ready`);
    return { userData: true };
  }

  /** Unpacks the project's ready profile `name` into a launching session's user-data; false when it is not ready. */
  async load(s: LaunchingSession, name: string): Promise<boolean> {
    const row = await store.getProfile(this.d.db, s.projectId, name);
    if (!row || row.status !== 'ready' || !row.storage_key) return false;
    const key = row.storage_key;
    await this.d.unpacked.copyTo(key, rootPaths(s.rootDir).userData, async (dir) => {
      const file = `${dir}.zip`;
      try {
        const stream = await this.d.storage.get(key);
        if (!stream) throw new Error(`the stored state of profile ${name} is missing`);
        await pipeline(stream, createWriteStream(file));
        await unpack({ path: file }, dir);
      } finally {
        await rm(file, { force: true });
      }
    });
    return true;
  }

  /**
   * The running session's state goes into the project's profile `name` when the session
   * ends: a new profile is pending until then; an existing one keeps its state until the
   * save replaces it.
   */
  async keepAtEnd(s: RunningSession, name: string): Promise<void> {
    const made = await store.insertPending(this.d.db, { id: randomUUID(), projectId: s.projectId, name, sessionId: s.id, dedicatedStickyIp: false });
    if (made) return;
    const row = await store.getProfile(this.d.db, s.projectId, name);
    if (row) this.persisting.set(s.id, [...(this.persisting.get(s.id) ?? []).filter((t) => t.id !== row.id), { id: row.id, name: row.name }]);
  }

  async started(s: RunningSession): Promise<void> {
    const wanted = s.options.profile;
    if (!wanted) return;
    if (s.serviceProxyId) {
      // A sticky profile keeps the proxy its session got: the one it asked for when that was
      // healthy and matched, else the new one from now on.
      const row = await store.getProfile(this.d.db, s.projectId, wanted.name);
      if (row?.dedicated_sticky_ip && row.sticky_proxy_id !== s.serviceProxyId) await store.setStickyProxy(this.d.db, row.id, s.serviceProxyId);
    }
    // Persisting into the profile it started from (or one made meanwhile under the name).
    if (wanted.persist) await this.keepAtEnd(s, wanted.name);
  }

  async ending(s: RunningSession): Promise<void> {
    const persisted = this.persisting.get(s.id) ?? [];
    this.persisting.delete(s.id);
    const targets: Target[] = (await store.pendingFor(this.d.db, s.id)).map((r) => ({ id: r.id, name: r.name }));
    for (const p of persisted) if (!targets.some((t) => t.id === p.id)) targets.push(p);
    if (targets.length === 0) return;

    const exit = await closeGracefully(s);
    if (!exit || exit.code !== 0 || exit.signal) {
      const how = !exit ? `did not close within ${CLOSE_WAIT_MS / 1000} s` : exit.signal ? `was killed (${exit.signal})` : `crashed (exit code ${exit.code})`;
      this.staged.set(s.id, { targets, failure: `The session's browser ${how}, so its state could not be saved` });
      return;
    }
    const dir = join(this.d.browsersDir, `${STAGED_PREFIX}${s.id}`);
    try {
      await rename(rootPaths(s.browser.rootDir).userData, dir);
      this.staged.set(s.id, { targets, dir });
    } catch (err) {
      this.staged.set(s.id, { targets, failure: `The session's state could not be kept: ${(err as Error).message}` });
    }
  }

  async ended(s: RunningSession): Promise<void> {
    const staged = this.staged.get(s.id);
    if (!staged) return;
    this.staged.delete(s.id);
    const log = this.d.log.child({ sessionId: s.id, profiles: staged.targets.map((t) => t.name) });
    if ('failure' in staged) {
      for (const t of staged.targets) await store.markFailed(this.d.db, t.id, staged.failure);
      log.warn({ reason: staged.failure }, 'profile not saved');
      return;
    }
    const file = `${staged.dir}.zip`;
    const started = Date.now();
    try {
      await pack(staged.dir, file);
      await rm(staged.dir, { recursive: true, force: true });
      let size = 0;
      for (const [i, t] of staged.targets.entries()) {
        // put() moves its file: every profile but the last gets a copy.
        const source = i === staged.targets.length - 1 ? file : `${file}.${i}`;
        if (source !== file) await copyFile(file, source);
        const key = `${s.projectId}/${t.id}/${randomUUID()}.zip`;
        size = (await this.d.storage.put(key, source)).size;
        const saved = await store.markSaved(this.d.db, t.id, key, size);
        // Deleted while it was being saved: what was written goes too.
        if (!saved.found) await this.d.storage.delete(key);
        else if (saved.replaced) {
          this.d.unpacked.forget(saved.replaced);
          await this.d.storage.delete(saved.replaced);
        }
      }
      log.info({ sizeBytes: size, saveMs: Date.now() - started }, 'profile saved');
    } catch (err) {
      for (const t of staged.targets) await store.markFailed(this.d.db, t.id, `The session's state could not be saved: ${(err as Error).message}`);
      log.error({ err }, 'profile save failed');
    } finally {
      await rm(staged.dir, { recursive: true, force: true });
      await rm(file, { force: true });
    }
  }
}

/**
 * Asks the browser to close (Browser.close: Chromium's orderly shutdown writes its cookie
 * store, storage and caches) and waits for its exit; undefined when it does not exit in
 * time. A browser that had exited already (closed by its client, or crashed) answers its
 * exit at once.
 */
async function closeGracefully(s: RunningSession): Promise<BrowserExit | undefined> {
  s.cdp.send('Browser.close').catch(() => {});
  return (await within(s.browser.exited, CLOSE_WAIT_MS)) ? s.browser.exited : undefined;
}
