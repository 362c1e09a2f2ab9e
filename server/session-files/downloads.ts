// Keeps what a session's pages download. Chromium writes downloads into the session's root
// (rootDir/downloads: the profile's folder, and the folder the CDP proxy gives any client's
// download behavior), which goes when the browser closes; so each finished file is moved
// into blob storage (area `downloads`) as it finishes, with its row, and listed from there.
//
// The server's own CDP connection asks for the browser's download events
// (Browser.setDownloadBehavior {behavior: default, eventsEnabled}: `default` keeps the
// profile's folder; Chromium sends the events to every connection that asked, whoever set
// the behavior last). Browser.downloadWillBegin names the file and its URL;
// Browser.downloadProgress `completed` gives the finished file's path. What finished
// unseen (a download begun by initial_url, before the events were asked for) is found on
// disk: at the start and at the end, every file of the folder that is not one of
// Chromium's files in progress (`….crdownload`, and the hidden `.org.chromium.Chromium.…`
// it may write first) is kept too. A download still in progress when the session ends is
// not kept: its file is partial.
import { randomUUID } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import type { Logger } from 'pino';
import type { RunningSession, SessionHooks } from '../capability/index.js';
import { downloadsDirOf } from '../browser/index.js';
import type { BlobStorage } from '../storage/blobs.js';
import type { Db } from '../store/db.js';
import { safeFileName, uniqueName } from '../storage/file-names.js';
import * as store from './store.js';

/** Longest URL kept with a download (a data: URL can be megabytes). */
const MAX_URL_LENGTH = 2048;
/** Chromium's files of downloads in progress. */
const PARTIAL = /^\.|\.crdownload$/;

interface Begun {
  url: string;
  suggestedFilename: string;
  startedAt: number;
  /** The tab's page the download started from, and the tab's browser context, when known. */
  originUrl?: string;
  browserContextId?: string;
  /** Settles once originUrl and browserContextId are known (or cannot be): a small download
   *  can finish before the browser has answered where it began. */
  described?: Promise<void>;
  cancelled?: boolean;
}

interface Followed {
  session: RunningSession;
  dir: string;
  /** Downloads seen starting, by guid (the name of an `allowAndName` file). */
  begun: Map<string, Begun>;
  /** Bytes kept so far, and the names handed out (suggested_file_name is unique in a session). */
  keptBytes: number;
  names: Set<string>;
  /** Files are kept one at a time, in the order they finished. */
  queue: Promise<void>;
  unsubscribe(): void;
}

export interface DownloadKeeperOptions {
  db: Db;
  storage: BlobStorage;
  log: Logger;
  /** Most bytes of downloads one session keeps. */
  maxBytes: number;
}

export class DownloadKeeper implements SessionHooks {
  private readonly followed = new Map<string, Followed>();

  constructor(private readonly o: DownloadKeeperOptions) {}

  async started(s: RunningSession): Promise<void> {
    const f: Followed = {
      session: s,
      dir: downloadsDirOf(s.browser.rootDir),
      begun: new Map(),
      keptBytes: 0,
      names: new Set(),
      queue: Promise.resolve(),
      unsubscribe: () => {},
    };
    this.followed.set(s.id, f);
    f.unsubscribe = s.cdp.on((method, params, sessionId) => {
      if (sessionId === undefined) this.onEvent(f, method, params);
    });
    await s.cdp.send('Browser.setDownloadBehavior', { behavior: 'default', eventsEnabled: true });
    this.sweep(f);
  }

  /** The browser is still up and its root still there: keep what finished, then let go. */
  async ending(s: RunningSession): Promise<void> {
    const f = this.followed.get(s.id);
    if (!f) return;
    f.unsubscribe();
    this.sweep(f);
    await f.queue;
    this.followed.delete(s.id);
  }

  private onEvent(f: Followed, method: string, params: any): void {
    if (method === 'Browser.downloadWillBegin') {
      const begun: Begun = { url: String(params.url ?? ''), suggestedFilename: String(params.suggestedFilename ?? ''), startedAt: Date.now() };
      f.begun.set(params.guid, begun);
      begun.described = this.describeOrigin(f, String(params.frameId ?? ''), begun);
    } else if (method === 'Browser.downloadProgress') {
      const begun = f.begun.get(params.guid);
      if (params.state === 'inProgress') {
        const bytes = Math.max(Number(params.receivedBytes) || 0, Number(params.totalBytes) || 0);
        if (begun && !begun.cancelled && f.keptBytes + bytes > this.o.maxBytes) this.cancel(f, params.guid, begun);
      } else if (params.state === 'completed' && typeof params.filePath === 'string') {
        this.enqueue(f, params.filePath, begun);
        f.begun.delete(params.guid);
      } else if (params.state === 'canceled') {
        f.begun.delete(params.guid);
      }
    }
  }

  /** The page the download started on: its frame is the tab's main frame when the ids agree. */
  private async describeOrigin(f: Followed, frameId: string, begun: Begun): Promise<void> {
    try {
      const { targetInfos } = await f.session.cdp.send<{ targetInfos: { targetId: string; url: string; browserContextId?: string }[] }>('Target.getTargets');
      const tab = targetInfos.find((t) => t.targetId === frameId);
      if (tab) {
        begun.originUrl = tab.url;
        begun.browserContextId = tab.browserContextId;
      }
    } catch {
      // the browser is going away; the download is kept without its origin
    }
  }

  private cancel(f: Followed, guid: string, begun: Begun): void {
    begun.cancelled = true;
    this.o.log.warn({ sessionId: f.session.id, limit: this.o.maxBytes }, 'download cancelled: it would take the session past its downloads limit');
    f.session.cdp
      .send('Browser.cancelDownload', { guid, ...(begun.browserContextId ? { browserContextId: begun.browserContextId } : {}) })
      .catch((err: Error) => this.o.log.warn({ sessionId: f.session.id, err: err.message }, 'could not cancel a download'));
  }

  /** Every finished file on disk that is not being kept already. */
  private sweep(f: Followed): void {
    f.queue = f.queue.then(async () => {
      const names = await readdir(f.dir).catch(() => [] as string[]);
      for (const name of names) {
        if (PARTIAL.test(name)) continue;
        const begun = f.begun.get(name); // an allowAndName file is named by its guid
        await this.keep(f, join(f.dir, name), begun);
      }
    });
  }

  private enqueue(f: Followed, filePath: string, begun: Begun | undefined): void {
    f.queue = f.queue.then(() => this.keep(f, filePath, begun));
  }

  /** Moves one finished file into storage with its row; never rejects (the queue goes on). */
  private async keep(f: Followed, filePath: string, begun: Begun | undefined): Promise<void> {
    const { session } = f;
    const log = this.o.log;
    try {
      const path = resolve(filePath);
      // Only the root's own folder: a file elsewhere is not the server's to move.
      if (!path.startsWith(resolve(f.dir) + sep)) {
        log.warn({ sessionId: session.id }, 'a download finished outside the session root; not kept');
        return;
      }
      const info = await stat(path).catch(() => undefined);
      if (!info?.isFile()) return; // kept already (the sweep and the event can both see it)
      await begun?.described;
      if (f.keptBytes + info.size > this.o.maxBytes) {
        log.warn({ sessionId: session.id, size: info.size, limit: this.o.maxBytes }, 'download not kept: it would take the session past its downloads limit');
        await rm(path, { force: true });
        return;
      }
      const original = safeFileName(begun?.suggestedFilename || basename(path), 'download');
      const name = uniqueName(original, f.names);
      f.names.add(name);
      const id = randomUUID();
      const key = `${session.projectId}/${session.id}/${id}`;
      // Moved, not copied: the browser is done with it, and the root is going anyway.
      const { size } = await this.o.storage.put(key, path);
      try {
        await store.insertDownload(this.o.db, {
          id,
          project_id: session.projectId,
          session_id: session.id,
          storage_key: key,
          file_name: name,
          original_file_name: begun?.suggestedFilename || basename(path),
          url: begun?.url && begun.url.length <= MAX_URL_LENGTH ? begun.url : null,
          origin_url: begun?.originUrl && begun.originUrl.length <= MAX_URL_LENGTH ? begun.originUrl : null,
          size_bytes: size,
          duration_ms: begun ? Date.now() - begun.startedAt : 0,
        });
      } catch (err) {
        await this.o.storage.delete(key);
        throw err;
      }
      f.keptBytes += size;
      log.info({ sessionId: session.id, downloadId: id, size }, 'download kept');
    } catch (err) {
      log.error({ sessionId: session.id, err }, 'could not keep a download');
    }
  }
}
