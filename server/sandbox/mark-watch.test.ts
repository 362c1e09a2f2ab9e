import { describe, expect, it } from 'vitest';
import { markWatch } from './jailed.js';

const MARK = '\u0000end-abc\u0000';

/** Feeds the chunks through a watch: what came out, and whether the mark was seen. */
function feed(chunks: string[]): { out: string[]; seen: boolean } {
  const out: string[] = [];
  let seen = false;
  const w = markWatch(
    MARK,
    (t) => out.push(t),
    () => (seen = true),
  );
  for (const c of chunks) w.push(c);
  w.flush();
  return { out, seen };
}

describe('markWatch', () => {
  it('passes text on without the mark and tells when it passes', () => {
    expect(feed(['hello\n', `bye${MARK}`])).toEqual({ out: ['hello\n', 'bye'], seen: true });
    expect(feed([MARK])).toEqual({ out: [], seen: true });
  });

  it('finds a mark split over chunks, holding back only what may be its start', () => {
    expect(feed(['a\u0000en', 'd-a', `bc\u0000`])).toEqual({ out: ['a'], seen: true });
    for (let cut = 1; cut < MARK.length; cut++) {
      const r = feed([`x${MARK.slice(0, cut)}`, MARK.slice(cut)]);
      expect(r.seen).toBe(true);
      expect(r.out.join('')).toBe('x');
    }
  });

  it('gives back a held start that was not the mark, in order', () => {
    expect(feed(['a\u0000e', 'x'])).toEqual({ out: ['a', '\u0000ex'], seen: false });
    expect(feed(['a\u0000e'])).toEqual({ out: ['a', '\u0000e'], seen: false });
  });

  it('passes everything after the mark on as it is (a second mark too)', () => {
    expect(feed([`${MARK}after${MARK}`]).out.join('')).toBe(`after${MARK}`);
  });
});
