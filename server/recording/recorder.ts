// Records a session's screen: the screencast's JPEG frames, at most RECORDING_FPS a second,
// with the time each came on screen, kept under DATA_DIR/recordings/.work/{session_id}
// (not in the browser's root, which goes when the browser does). When the session has
// ended, ffmpeg turns them into an MP4 (encode.ts), the storage keeps it, and the
// recording's row and its session.recording.ready event commit in one transaction.
//
// Pausing cuts the paused time out of the video. Deleting the primary recording of a
// running session discards what was recorded and records nothing more. A server that was
// killed leaves frames behind: the next start encodes them (the index is written as the
// frames are).
import { randomUUID } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { RunningSession, SessionEnd, SessionHooks } from '../capability/index.js';
import { emitEvent, type EmitSignals } from '../outbox/emit.js';
import type { Frame, Screencasts } from '../liveview/index.js';
import { encode, type Timeline, type TimelineFrame } from './encode.js';
import type { BlobStorage } from '../storage/blobs.js';
import * as store from './store.js';
import { sessionDashboardUrl } from '../outbox/links.js';

export interface RecorderOptions {
  db: Db;
  log: Logger;
  screencasts: Screencasts;
  storage: BlobStorage;
  /** DATA_DIR: frames are kept under DATA_DIR/recordings/.work. */
  dataDir: string;
  ffmpegPath: string;
  fps: number;
  publicUrl: string;
  signals: EmitSignals;
}

export type RecordingState = 'recording' | 'paused' | 'discarded';

const INDEX = 'index.jsonl';
/** A recording cut short by a crash shows its last frame this long. */
const RECOVERED_TAIL_MS = 1_000;

/** One session's recording while it runs. */
class Recording {
  frames = 0;
  private lastT = -Infinity;
  private pending: Frame | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pausedAt: number | undefined;
  pausedMs = 0;
  /** Set by finish(): Date.now() then, and the video's length. */
  private endedAt = 0;
  private endMs = 0;
  discarded = false;
  finished = false;
  /** File writes, in order. */
  writes: Promise<void> = Promise.resolve();
  private unsubscribe: () => void = () => {};
  private readonly minGap: number;

  constructor(
    readonly session: RunningSession,
    readonly dir: string,
    private readonly startedAt: number,
    fps: number,
    private readonly screencasts: Screencasts,
    private readonly log: Logger,
  ) {
    this.minGap = 1000 / fps;
  }

  get state(): RecordingState {
    return this.discarded ? 'discarded' : this.pausedAt !== undefined ? 'paused' : 'recording';
  }

  start(): void {
    this.subscribe(false);
  }

  pause(): void {
    if (this.state !== 'recording' || this.finished) return;
    this.flushPending();
    this.pausedAt = Date.now();
    this.unsubscribe();
  }

  resume(): void {
    if (this.pausedAt === undefined || this.discarded || this.finished) return;
    this.pausedMs += Date.now() - this.pausedAt;
    this.pausedAt = undefined;
    // A screencast that kept running (someone watches) has the screen as it is now.
    this.subscribe(this.screencasts.hub(this.session).active);
  }

  /** Drops everything recorded, and records nothing more. */
  discard(): void {
    if (this.discarded) return;
    this.discarded = true;
    this.unsubscribe();
    clearTimeout(this.timer);
    this.pending = undefined;
    this.writes = this.writes.then(() => rm(this.dir, { recursive: true, force: true }));
  }

  /**
   * The last frame stays on screen until the session's recorded end (the browser closing
   * takes a moment after the last frame), within reason if clocks disagree.
   */
  extendTo(endedAt: Date): void {
    // Paused at the end: the rest was not recorded anyway.
    if (!this.finished || this.pausedAt !== undefined) return;
    const end = Math.round(Math.min(endedAt.getTime(), this.endedAt + 30_000) - this.startedAt - this.pausedMs);
    if (end > this.endMs) {
      this.endMs = end;
      this.writeEnd();
    }
  }

  /** A frame taken at the end for a recording that has none yet: the video shows it from the start. */
  keepStill(frame: Frame): void {
    if (this.frames > 0 || this.state !== 'recording' || this.finished) return;
    this.keep(frame, 0);
  }

  /** The session is ending: the last frame is written and the video's length fixed. */
  finish(): void {
    if (this.finished) return;
    if (this.pausedAt === undefined) this.flushPending();
    this.endedAt = Date.now();
    this.endMs = Math.max(0, (this.pausedAt ?? this.endedAt) - this.startedAt - this.pausedMs);
    this.finished = true;
    this.unsubscribe();
    clearTimeout(this.timer);
    this.writeEnd();
  }

  private writeEnd(): void {
    const pausedMs = this.pausedMs + (this.pausedAt !== undefined ? this.endedAt - this.pausedAt : 0);
    const line = JSON.stringify({ end: this.endMs, paused: pausedMs }) + '\n';
    this.write(async () => appendFile(join(this.dir, INDEX), line));
  }

  private subscribe(replay: boolean): void {
    this.unsubscribe = this.screencasts.hub(this.session).subscribe((f) => this.onFrame(f), { replay });
  }

  private videoTime(now = Date.now()): number {
    return now - this.startedAt - this.pausedMs;
  }

  private onFrame(frame: Frame): void {
    if (this.state !== 'recording' || this.finished) return;
    const t = this.videoTime();
    if (this.frames === 0 || t - this.lastT >= this.minGap) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.pending = undefined;
      this.keep(frame, this.frames === 0 ? 0 : t);
      return;
    }
    // Too soon after the last one: keep the newest, written when its turn comes, so the
    // last state of a burst of changes is always in the video.
    this.pending = frame;
    if (!this.timer) {
      this.timer = setTimeout(
        () => {
          this.timer = undefined;
          this.flushPending();
        },
        Math.max(0, this.lastT + this.minGap - t),
      );
      this.timer.unref();
    }
  }

  private flushPending(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const p = this.pending;
    this.pending = undefined;
    if (p && !this.discarded) this.keep(p, Math.max(this.lastT + 1, this.videoTime()));
  }

  private keep(frame: Frame, t: number): void {
    const n = ++this.frames;
    this.lastT = t;
    const entry: TimelineFrame = { file: `${String(n).padStart(7, '0')}.jpg`, t: Math.round(t), w: frame.meta.width, h: frame.meta.height };
    this.write(async () => {
      await writeFile(join(this.dir, entry.file), frame.data);
      await appendFile(join(this.dir, INDEX), JSON.stringify(entry) + '\n');
    });
  }

  private write(fn: () => Promise<void>): void {
    this.writes = this.writes.then(async () => {
      if (this.discarded) return;
      try {
        await fn();
      } catch (err) {
        this.log.error({ sessionId: this.session.id, err: (err as Error).message }, 'could not write a recording frame');
      }
    });
  }
}

export class Recorder implements SessionHooks {
  private readonly active = new Map<string, Recording>();
  private readonly background = new Set<Promise<void>>();
  private readonly abort = new AbortController();

  constructor(private readonly o: RecorderOptions) {
    // Every encode running listens to it (ffmpeg is killed at close): a batch of sessions
    // ending together runs more than Node's default of 10 without any leak.
    setMaxListeners(0, this.abort.signal);
  }

  get workDir(): string {
    return join(this.o.dataDir, 'recordings', '.work');
  }

  /** Encodes what a killed predecessor left, in the background (close() waits for it). */
  async start(): Promise<void> {
    await mkdir(this.workDir, { recursive: true });
    const left = (await readdir(this.workDir)).filter((name) => !this.active.has(name));
    if (left.length === 0) return;
    this.o.log.warn({ recordings: left.length }, 'encoding recordings left by a previous run');
    this.track(
      (async () => {
        for (const sessionId of left) {
          if (this.abort.signal.aborted) return;
          await this.recover(sessionId).catch((err: Error) => this.o.log.error({ sessionId, err: err.message }, 'could not recover a recording'));
        }
      })(),
    );
  }

  /** Stops encoding (a shutdown): what is left is encoded at the next start. */
  async close(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.background);
  }

  state(sessionId: string): RecordingState | undefined {
    const r = this.active.get(sessionId);
    return r && !r.finished ? r.state : r?.discarded ? 'discarded' : undefined;
  }

  /** Answers the state after pausing, or undefined when the session records nothing here. */
  pause(sessionId: string): RecordingState | undefined {
    const r = this.active.get(sessionId);
    if (!r || r.finished) return r?.discarded ? 'discarded' : undefined;
    r.pause();
    return r.state;
  }

  resume(sessionId: string): RecordingState | undefined {
    const r = this.active.get(sessionId);
    if (!r || r.finished) return r?.discarded ? 'discarded' : undefined;
    r.resume();
    return r.state;
  }

  /** Discards a recording in progress (or being encoded); false when there is none. */
  discard(sessionId: string): boolean {
    const r = this.active.get(sessionId);
    if (!r || r.discarded) return false;
    r.discard();
    return true;
  }

  async started(s: RunningSession): Promise<void> {
    if (!s.options.recording) return;
    const dir = join(this.workDir, s.id);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const r = new Recording(s, dir, Date.now(), this.o.fps, this.o.screencasts, this.o.log);
    this.active.set(s.id, r);
    r.start();
  }

  async ending(s: RunningSession): Promise<void> {
    const r = this.active.get(s.id);
    if (!r) return;
    // A session whose page never repainted while it was recorded (one that ends soon after
    // it starts) still gets its recording: of the screen as it is at the end. Before the
    // screencast's own ending hook (live view is composed before recordings), which closes it.
    if (r.frames === 0 && r.state === 'recording') {
      // Without it there is no recording at all: wait for a loaded browser (a crashed one
      // fails at once). With 2 s, a cluster test's session under load once had no recording;
      // a late still is the likely cause, not a proven one (the warning below tells).
      const still = await this.o.screencasts.hub(s).still(10_000);
      if (still) r.keepStill(still);
      else this.o.log.warn({ sessionId: s.id }, 'no frame for the recording: the page could not be captured at the end');
    }
    r.finish();
  }

  async ended(s: RunningSession, end: SessionEnd): Promise<void> {
    const r = this.active.get(s.id);
    if (!r) return;
    r.finish();
    r.extendTo(end.endedAt);
    try {
      await r.writes;
      if (r.discarded) return;
      const done = this.encodeAndStore(r.dir, s.id, s.projectId, () => r.discarded);
      this.track(done);
      await done;
    } finally {
      this.active.delete(s.id);
      if (r.discarded) await rm(r.dir, { recursive: true, force: true });
    }
  }

  private track(p: Promise<void>): void {
    const tracked = p.catch(() => {}).finally(() => this.background.delete(tracked));
    this.background.add(tracked);
  }

  private async recover(sessionId: string): Promise<void> {
    const dir = join(this.workDir, sessionId);
    const projectId = /^[0-9a-f-]{36}$/.test(sessionId) ? await store.projectOfSession(this.o.db, sessionId) : undefined;
    if (!projectId || (await store.findRecording(this.o.db, projectId, sessionId, 'primary'))) {
      await rm(dir, { recursive: true, force: true });
      return;
    }
    await this.encodeAndStore(dir, sessionId, projectId, () => false);
  }

  /** Encodes a recording's frames, stores the MP4, and records it with its event. */
  private async encodeAndStore(dir: string, sessionId: string, projectId: string, discarded: () => boolean): Promise<void> {
    const log = this.o.log.child({ sessionId });
    try {
      const { timeline, pausedMs } = await readTimeline(dir);
      if (timeline.frames.length === 0) {
        log.warn('the recording has no frames: nothing to encode');
        return;
      }
      const started = performance.now();
      const out = join(dir, 'recording.mp4');
      await encode({ ffmpegPath: this.o.ffmpegPath, dir, timeline, out, signal: this.abort.signal });
      if (discarded()) return;
      const id = randomUUID();
      const key = `${projectId}/${sessionId}/${id}.mp4`;
      const { size } = await this.o.storage.put(key, out);
      try {
        await this.o.db.transaction(async (tx) => {
          await store.insertRecording(tx, {
            id,
            project_id: projectId,
            session_id: sessionId,
            is_primary: true,
            storage_key: key,
            duration_ms: Math.round(timeline.endMs),
            size_bytes: size,
            paused_ms: Math.round(pausedMs),
          });
          await emitEvent(tx, this.o.signals, projectId, 'session.recording.ready', {
            session_id: sessionId,
            duration_ms: Math.round(timeline.endMs),
            size_bytes: size,
            session_dashboard_url: sessionDashboardUrl(this.o.publicUrl, sessionId),
          });
        });
      } catch (err) {
        await this.o.storage.delete(key);
        throw err;
      }
      log.info(
        { recordingId: id, frames: timeline.frames.length, durationMs: timeline.endMs, sizeBytes: size, encodeMs: Math.round(performance.now() - started) },
        'recording stored',
      );
    } catch (err) {
      if (this.abort.signal.aborted) {
        log.warn('recording left for the next start to encode');
        return;
      }
      log.error({ err: (err as Error).message }, 'recording failed');
    } finally {
      if (!this.abort.signal.aborted) await rm(dir, { recursive: true, force: true });
    }
  }
}

/** The frames and length a recording's index holds (a crash leaves no end line: then the last frame gets a second). */
export async function readTimeline(dir: string): Promise<{ timeline: Timeline; pausedMs: number }> {
  let text = '';
  try {
    text = await readFile(join(dir, INDEX), 'utf8');
  } catch {
    // no frame was ever written
  }
  const frames: TimelineFrame[] = [];
  let end: number | undefined;
  let pausedMs = 0;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let entry: Partial<TimelineFrame> & { end?: number; paused?: number };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // a line cut short by a crash
    }
    if (typeof entry.end === 'number') {
      end = entry.end;
      pausedMs = entry.paused ?? 0;
    } else if (typeof entry.file === 'string' && typeof entry.t === 'number') {
      frames.push({ file: entry.file, t: entry.t, w: entry.w ?? 0, h: entry.h ?? 0 });
    }
  }
  const last = frames[frames.length - 1];
  const endMs = Math.max(end ?? (last ? last.t + RECOVERED_TAIL_MS : 0), last ? last.t + 1 : 0);
  return { timeline: { frames, endMs }, pausedMs };
}
