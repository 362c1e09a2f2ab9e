// Frames with their times → an MP4, through ffmpeg's concat demuxer: each JPEG is shown for
// exactly as long as it was on screen (variable frame rate, millisecond timestamps), so the
// video has the session's real timing without repeating still frames.
import { execFile, spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface TimelineFrame {
  /** File name inside the recording's directory. */
  file: string;
  /** When the frame came on screen, ms from the start of the video. */
  t: number;
  /** The page's size in CSS pixels. */
  w: number;
  h: number;
}

export interface Timeline {
  frames: TimelineFrame[];
  /** Length of the video in ms (pauses are cut out). */
  endMs: number;
}

interface Capabilities {
  encoder: 'libx264' | 'mpeg4';
  /** ffmpeg ≥ 5.1: -fps_mode (older: -vsync). */
  fpsMode: boolean;
  /** ffmpeg ≥ 5: per-file options in the concat list (a millisecond clock for images). */
  concatOptions: boolean;
}

const capabilities = new Map<string, Promise<Capabilities>>();

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { maxBuffer: 16 * 1024 * 1024, timeout: 30_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
  );
}

/** What this ffmpeg can do, asked once per executable. */
export function ffmpegCapabilities(ffmpegPath: string): Promise<Capabilities> {
  let c = capabilities.get(ffmpegPath);
  if (!c) {
    c = (async () => {
      const [version, encoders] = await Promise.all([run(ffmpegPath, ['-hide_banner', '-version']), run(ffmpegPath, ['-hide_banner', '-encoders'])]);
      const m = /ffmpeg version n?(\d+)\.(\d+)/.exec(version);
      const [major, minor] = m ? [Number(m[1]), Number(m[2])] : [5, 1];
      return {
        encoder: /\blibx264\b/.test(encoders) ? 'libx264' : 'mpeg4',
        fpsMode: major > 5 || (major === 5 && minor >= 1),
        concatOptions: major >= 5,
      };
    })();
    capabilities.set(ffmpegPath, c);
    c.catch(() => capabilities.delete(ffmpegPath));
  }
  return c;
}

/** The ffconcat list: every frame with its duration; the last frame repeated (the demuxer's way to honour its duration). */
export function concatList(tl: Timeline, options: { concatOptions: boolean }): string {
  const lines = ['ffconcat version 1.0'];
  const entry = (file: string, seconds: number) => {
    lines.push(`file '${file.replace(/'/g, "'\\''")}'`);
    if (options.concatOptions) lines.push('option framerate 1000');
    lines.push(`duration ${seconds.toFixed(3)}`);
  };
  tl.frames.forEach((f, i) => {
    const next = i + 1 < tl.frames.length ? tl.frames[i + 1]!.t : Math.max(tl.endMs, f.t + 1);
    entry(f.file, Math.max(1, next - f.t) / 1000);
  });
  const last = tl.frames[tl.frames.length - 1];
  if (last) entry(last.file, 0.001);
  return lines.join('\n') + '\n';
}

/** Even output dimensions (yuv420p) from the first frame's page size. */
export function outputSize(tl: Timeline): { width: number; height: number } {
  const first = tl.frames[0];
  const even = (n: number) => Math.max(2, Math.floor(n / 2) * 2);
  return { width: even(first?.w ?? 640), height: even(first?.h ?? 480) };
}

export interface EncodeOptions {
  ffmpegPath: string;
  /** Holds the frames; the list is written here. */
  dir: string;
  timeline: Timeline;
  out: string;
  signal?: AbortSignal;
}

export async function encode(o: EncodeOptions): Promise<void> {
  if (o.timeline.frames.length === 0) throw new Error('no frames to encode');
  const caps = await ffmpegCapabilities(o.ffmpegPath);
  const list = join(o.dir, 'frames.ffconcat');
  await writeFile(list, concatList(o.timeline, caps));
  const { width, height } = outputSize(o.timeline);
  // Frames of another size (a popup window, a resized viewport) are fitted into the first's.
  const vf = `scale=${width}:${height}:force_original_aspect_ratio=decrease,pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuv420p`;
  const codec = caps.encoder === 'libx264' ? ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '28'] : ['-c:v', 'mpeg4', '-q:v', '5'];
  const args = [
    '-hide_banner',
    '-loglevel',
    'error',
    '-nostdin',
    '-y',
    '-f',
    'concat',
    '-safe',
    '0',
    '-i',
    list,
    '-vf',
    vf,
    ...(caps.fpsMode ? ['-fps_mode', 'vfr'] : ['-vsync', 'vfr']),
    '-video_track_timescale',
    '1000',
    ...codec,
    '-movflags',
    '+faststart',
    '-f',
    'mp4',
    o.out,
  ];
  await new Promise<void>((resolve, reject) => {
    const child = spawn(o.ffmpegPath, args, { stdio: ['ignore', 'ignore', 'pipe'], signal: o.signal });
    // Encoding yields to the browsers: it is not in anyone's way when it takes longer.
    if (child.pid !== undefined) {
      try {
        setPriority(child.pid, 10);
      } catch {
        // not permitted: runs at normal priority
      }
    }
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2_000)));
    child.once('error', reject);
    child.once('close', (code, sig) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited with ${code ?? sig}: ${stderr.trim()}`))));
  });
}
