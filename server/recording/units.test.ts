// The pure parts of recordings: Range headers, the concat list ffmpeg is given, and a
// timeline read back from an index a crash cut short.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRange } from '../storage/ranged.js';
import { concatList, outputSize } from './encode.js';
import { readTimeline } from './recorder.js';

describe('parseRange', () => {
  const size = 1000;
  it('reads one range of each form', () => {
    expect(parseRange('bytes=0-99', size)).toEqual({ kind: 'part', range: { start: 0, end: 99 } });
    expect(parseRange('bytes=900-', size)).toEqual({ kind: 'part', range: { start: 900, end: 999 } });
    expect(parseRange('bytes=-100', size)).toEqual({ kind: 'part', range: { start: 900, end: 999 } });
    expect(parseRange('bytes=-5000', size)).toEqual({ kind: 'part', range: { start: 0, end: 999 } });
    expect(parseRange('bytes=10-5000', size)).toEqual({ kind: 'part', range: { start: 10, end: 999 } });
    expect(parseRange(' Bytes = 1 - 2 ', size)).toEqual({ kind: 'part', range: { start: 1, end: 2 } });
  });
  it('refuses ranges outside the file', () => {
    expect(parseRange('bytes=1000-', size)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=1000-2000', size)).toEqual({ kind: 'unsatisfiable' });
    expect(parseRange('bytes=-0', size)).toEqual({ kind: 'unsatisfiable' });
  });
  it('ignores what is not one byte range', () => {
    for (const h of [undefined, '', 'bytes=0-1,3-4', 'items=0-1', 'bytes=5-2', 'bytes=-', 'garbage'])
      expect(parseRange(h, size), String(h)).toEqual({ kind: 'whole' });
  });
});

describe('concatList', () => {
  it('gives every frame the time until the next, the last until the end, and repeats the last', () => {
    const tl = {
      frames: [
        { file: 'a.jpg', t: 0, w: 801, h: 600 },
        { file: "b'.jpg", t: 1500, w: 801, h: 600 },
      ],
      endMs: 4000,
    };
    expect(concatList(tl, { concatOptions: true })).toBe(
      [
        'ffconcat version 1.0',
        "file 'a.jpg'",
        'option framerate 1000',
        'duration 1.500',
        "file 'b'\\''.jpg'",
        'option framerate 1000',
        'duration 2.500',
        "file 'b'\\''.jpg'",
        'option framerate 1000',
        'duration 0.001',
        '',
      ].join('\n'),
    );
    expect(outputSize(tl)).toEqual({ width: 800, height: 600 });
  });
});

describe('readTimeline', () => {
  it('takes the last end line, skips a line cut short, and gives a crashed recording a last second', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cb-timeline-'));
    try {
      writeFileSync(
        join(dir, 'index.jsonl'),
        '{"file":"1.jpg","t":0,"w":10,"h":10}\n{"file":"2.jpg","t":500,"w":10,"h":10}\n{"end":900,"paused":100}\n{"end":1200,"paused":100}\n',
      );
      const ended = await readTimeline(dir);
      expect(ended.timeline.frames.map((f) => f.file)).toEqual(['1.jpg', '2.jpg']);
      expect(ended).toMatchObject({ timeline: { endMs: 1200 }, pausedMs: 100 });
      writeFileSync(join(dir, 'index.jsonl'), '{"file":"1.jpg","t":0,"w":10,"h":10}\n{"file":"2.jpg","t":500,"w":10,"h":10}\n{"file":"3.jp');
      const crashed = await readTimeline(dir);
      expect(crashed.timeline.frames.map((f) => f.file)).toEqual(['1.jpg', '2.jpg']);
      expect(crashed.timeline.endMs).toBe(1500);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
