// A mouse wheel that returns once the page has scrolled. Playwright's `mouse.wheel` returns
// when the renderer has taken the event, which can be before the page's main thread sees the
// scroll: the compositor scrolls, and the new offset reaches the page (its `scroll` event,
// `scrollY`, element boxes) with the next frame, which on a loaded machine comes late; with
// smooth scrolling the scroll runs over several frames. A snapshot read right after the wheel
// can then show the page as it was (the agent's small-model test once saw that on CI). This
// waits for the page's own events instead of a time: a `scroll` in the next two frames, then
// its `scrollend`; no `scroll` by then means nothing under the pointer could move that way.
// Each wait is bounded, for a page that renders no frames or never reports a scroll's end.
import type { Page } from 'playwright-core';
import { inPage } from './in-page.js';

/** Longest wait for the two frames after the wheel (a page in the background renders none). */
const START_MS = 2_000;
/** Longest a scroll may run after its last `scroll` event without reporting its end. */
const QUIET_MS = 2_000;

export async function wheelAndSettle(page: Page, deltaX: number, deltaY: number): Promise<void> {
  // Installed before the wheel, so that a scroll which starts at once is seen.
  const watch = await page.evaluateHandle(inPage(watchScroll, START_MS, QUIET_MS)).catch(() => undefined);
  try {
    await page.mouse.wheel(deltaX, deltaY);
    // A navigation or a closed page ends the wait: nothing is left to settle.
    await watch?.evaluate((w: { settled: () => Promise<void> }) => w.settled()).catch(() => {});
  } finally {
    await watch?.dispose().catch(() => {});
  }
}

/** In the page: `settled()` resolves on the scroll's end, or when none started within two frames. */
function watchScroll(startMs: number, quietMs: number) {
  let done: () => void = () => {};
  const ended = new Promise<void>((resolve) => (done = resolve));
  let timer: ReturnType<typeof setTimeout> | undefined;
  let scrolling = false;
  const finish = () => {
    clearTimeout(timer);
    removeEventListener('scroll', onScroll, true);
    removeEventListener('scrollend', finish, true);
    done();
  };
  const onScroll = () => {
    scrolling = true;
    clearTimeout(timer);
    timer = setTimeout(finish, quietMs);
  };
  // Capturing on the window sees the events of every scrolled element, which do not bubble.
  addEventListener('scroll', onScroll, { capture: true, passive: true });
  addEventListener('scrollend', finish, true);
  return {
    settled: () => {
      if (!scrolling) {
        // A frame applies the scroll and dispatches `scroll` before its animation callbacks.
        timer = setTimeout(finish, startMs);
        requestAnimationFrame(() => requestAnimationFrame(() => scrolling || finish()));
      }
      return ended;
    },
  };
}
