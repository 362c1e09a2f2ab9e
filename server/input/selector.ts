// Where to click an element named by a CSS selector (the vendor's `mouse/click` form): the
// centre of the visible part of the index-th match, in the page's viewport, which is the
// coordinate space of every input operation. The element is scrolled into view first, as
// a person would before clicking it; the click itself stays OS-level input at that point.
import { setTimeout as sleep } from 'node:timers/promises';
import type { PageSessions } from '../browser/pages.js';

export type ElementPoint = { x: number; y: number } | { refused: string };

/**
 * Runs in the page: polls on a timer (not animation frames, which a page not in front never
 * gets) until the element exists and has a visible part, or the time is up. Answers the
 * point, or why not.
 */
const FIND = `(selector, index, timeoutMs) => new Promise((resolve) => {
  const deadline = performance.now() + timeoutMs;
  const look = () => {
    let all;
    try {
      all = document.querySelectorAll(selector);
    } catch {
      return resolve({ refused: 'invalid' });
    }
    const el = all[index];
    if (el) {
      const style = getComputedStyle(el);
      if (style.visibility !== 'hidden' && el.getClientRects().length > 0) {
        // Only when not wholly in view, as a person scrolls (an element in view stays put).
        // The viewport without its scroll bars, which take no clicks for the page.
        const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight;
        const seen = el.getBoundingClientRect();
        if (seen.left < 0 || seen.top < 0 || seen.right > vw || seen.bottom > vh) {
          el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
        }
        const r = el.getBoundingClientRect();
        const left = Math.max(0, r.left), top = Math.max(0, r.top);
        const right = Math.min(vw, r.right), bottom = Math.min(vh, r.bottom);
        if (right > left && bottom > top) return resolve({ x: Math.floor((left + right) / 2), y: Math.floor((top + bottom) / 2) });
      }
    }
    if (performance.now() >= deadline) return resolve({ refused: all.length > index ? 'hidden' : 'missing', count: all.length });
    setTimeout(look, 50);
  };
  look();
})`;

/** Finds the point to click for `selector` in the page `targetId`, waiting up to timeoutMs. */
export async function elementPoint(pages: PageSessions, targetId: string, selector: string, index: number, timeoutMs: number): Promise<ElementPoint> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = Math.max(0, deadline - Date.now());
    let answer: { x: number; y: number } | { refused: 'invalid' | 'hidden' | 'missing'; count: number };
    try {
      const res = (await pages.send(
        targetId,
        'Runtime.evaluate',
        { expression: `(${FIND})(${JSON.stringify(selector)}, ${index}, ${left})`, awaitPromise: true, returnByValue: true },
        left + 5_000,
      )) as { result: { value?: typeof answer } };
      answer = res.result.value ?? { refused: 'missing', count: 0 };
    } catch (err) {
      // The page navigated while we waited (its context went away): look again in the new
      // document, within the same time.
      if (Date.now() < deadline && /context|navigat|destroyed/i.test(String(err))) {
        await sleep(50);
        continue;
      }
      throw err;
    }
    if ('x' in answer) return answer;
    const which = index === 0 ? '' : ` (index ${index})`;
    if (answer.refused === 'invalid') return { refused: `selector is not a valid CSS selector: ${JSON.stringify(selector)}` };
    if (answer.refused === 'hidden') return { refused: `The element ${JSON.stringify(selector)}${which} is not visible after ${timeoutMs} ms` };
    const found = answer.count === 0 ? 'no element matches' : `only ${answer.count} element${answer.count === 1 ? '' : 's'} match`;
    return { refused: `No element to click after ${timeoutMs} ms: ${found} ${JSON.stringify(selector)}${which}` };
  }
}
