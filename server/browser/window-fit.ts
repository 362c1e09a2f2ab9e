// Measuring a launched browser's page against its window, and correcting the window so
// the page gets exactly the viewport that was asked for.
import { setTimeout as sleep } from 'node:timers/promises';
import { CdpClient } from './cdp-client.js';
import type { Size } from './flags.js';
import type { Log } from './log.js';
import { within } from './procfs.js';

export interface PageMeasure {
  /** window.innerWidth/innerHeight of the first tab. */
  inner: Size;
  windowId: number;
  /** Outer window bounds as Chromium reports them. */
  bounds: { left: number; top: number; width: number; height: number; windowState: string };
}

/** Measures the first tab (Chromium opens it a moment after DevTools is ready: waits). */
export async function measureFirstPage(cdp: CdpClient, timeoutMs = 5_000): Promise<PageMeasure> {
  const deadline = Date.now() + timeoutMs;
  let targetId: string | undefined;
  while (!targetId) {
    const { targetInfos } = await cdp.send<{ targetInfos: { targetId: string; type: string }[] }>('Target.getTargets');
    targetId = targetInfos.find((t) => t.type === 'page')?.targetId;
    if (!targetId) {
      if (Date.now() > deadline) throw new Error('no page target appeared');
      await sleep(50);
    }
  }
  const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
  try {
    const { result } = await cdp.send<{ result: { value: [number, number] } }>(
      'Runtime.evaluate',
      { expression: '[innerWidth, innerHeight]', returnByValue: true },
      sessionId,
    );
    const { windowId, bounds } = await cdp.send<{ windowId: number; bounds: PageMeasure['bounds'] }>('Browser.getWindowForTarget', { targetId });
    return { inner: { width: result.value[0], height: result.value[1] }, windowId, bounds };
  } finally {
    await cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {});
  }
}

/**
 * The first tab's target id, as soon as Chromium has opened it (a moment after DevTools is
 * ready). Discovery reports the targets that exist, then each one created: no polling.
 */
export async function firstPage(cdp: CdpClient, timeoutMs = 5_000): Promise<string> {
  let found!: (targetId: string) => void;
  const created = new Promise<string>((r) => (found = r));
  const off = cdp.on((method, params) => {
    if (method === 'Target.targetCreated' && params.targetInfo.type === 'page') found(params.targetInfo.targetId);
  });
  try {
    await cdp.send('Target.setDiscoverTargets', { discover: true });
    if (!(await within(created, timeoutMs))) throw new Error('no page target appeared');
    return await created;
  } finally {
    off();
  }
}

const same = (a: Size, b: Size) => a.width === b.width && a.height === b.height;

/** Measures until two readings 100 ms apart agree (the first layout may be pending). */
export async function measureSettled(cdp: CdpClient): Promise<PageMeasure> {
  let m = await measureFirstPage(cdp);
  for (let i = 0; i < 10; i++) {
    await sleep(100);
    const next = await measureFirstPage(cdp);
    if (same(next.inner, m.inner) && next.bounds.width === m.bounds.width && next.bounds.height === m.bounds.height) return next;
    m = next;
  }
  return m;
}

/**
 * Makes the first tab's viewport equal `viewport`, resizing the window if the insets
 * were not what we expected (a profile with the bookmarks bar shown, a new Chromium with a
 * taller toolbar). Best effort: logs and returns the final measure, never throws for a
 * mismatch (a browser with a slightly different viewport still serves the session).
 */
export async function fitViewport(cdp: CdpClient, viewport: Size, log: Log): Promise<PageMeasure> {
  let m = await measureFirstPage(cdp);
  // Right after startup the first layout may not have happened yet: look again briefly
  // before concluding the window is wrong.
  for (let i = 0; i < 5 && !same(m.inner, viewport); i++) {
    await sleep(100);
    m = await measureFirstPage(cdp);
  }
  if (same(m.inner, viewport)) return m;
  if (m.bounds.windowState === 'normal') {
    const width = m.bounds.width + viewport.width - m.inner.width;
    const height = m.bounds.height + viewport.height - m.inner.height;
    log.warn({ viewport, inner: m.inner, window: { width, height } }, 'page viewport differs from the request: resizing the window');
    await cdp.send('Browser.setWindowBounds', { windowId: m.windowId, bounds: { left: 0, top: 0, width, height } });
    for (let i = 0; i < 10; i++) {
      await sleep(100);
      m = await measureFirstPage(cdp);
      if (same(m.inner, viewport)) return m;
    }
  }
  log.warn({ viewport, inner: m.inner, windowState: m.bounds.windowState }, 'page viewport differs from the request');
  return m;
}

/** How long the window must stay fullscreen, its page the whole screen, before launch goes on. */
const FULLSCREEN_HOLD_MS = 1_000;
/** A state asked for is given this long to come before it is asked for again. */
const FULLSCREEN_ASK_MS = 500;

/**
 * Waits until the first tab is fullscreen and stays so. On an X display without a window
 * manager, Chromium sets a fullscreen state no one confirms, and a late notice of the
 * window's earlier state can take it back out: on a loaded machine, 1 launch in 15 was seen
 * to enter fullscreen and drop back to a normal window (its page the screen less the
 * toolbar, 1024x681 of 1024x768) up to a second later, and a request for the state was
 * undone the same way. So the state is asked for again whenever it is lost, and only a
 * state that has held for FULLSCREEN_HOLD_MS counts.
 */
export async function holdFullscreen(cdp: CdpClient, viewport: Size, log: Log, timeoutMs = 10_000): Promise<PageMeasure> {
  const deadline = Date.now() + timeoutMs;
  let m = await measureFirstPage(cdp);
  let heldSince: number | undefined;
  let asked = 0;
  let askedAt = -Infinity;
  for (;;) {
    if (m.bounds.windowState === 'fullscreen' && same(m.inner, viewport)) {
      heldSince ??= Date.now();
      if (Date.now() - heldSince >= FULLSCREEN_HOLD_MS) break;
    } else {
      heldSince = undefined;
      if (m.bounds.windowState !== 'fullscreen' && Date.now() - askedAt >= FULLSCREEN_ASK_MS) {
        asked++;
        askedAt = Date.now();
        await cdp.send('Browser.setWindowBounds', { windowId: m.windowId, bounds: { windowState: 'fullscreen' } });
      }
    }
    if (Date.now() > deadline) break;
    await sleep(100);
    m = await measureFirstPage(cdp);
  }
  if (asked) log.info({ asked, windowState: m.bounds.windowState }, 'fullscreen asked for again');
  if (heldSince === undefined) log.warn({ viewport, inner: m.inner, windowState: m.bounds.windowState }, 'fullscreen page differs from the request');
  return m;
}
