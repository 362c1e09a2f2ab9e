// The page as a model sees it and names its elements: Playwright's aria snapshot in its
// "ai" mode (roles, names, states, and a ref [ref=eN] on each element one can act on), and
// the locator of a ref from the page's last snapshot. The MCP page tools and the web-task
// agent both speak in these refs.
import type { Locator, Page } from 'playwright-core';

const SNAPSHOT_TIMEOUT_MS = 10_000;

/** boxes: each element's [box=x,y,width,height] in the viewport, to trim the snapshot to what is in view. */
export function ariaSnapshot(page: Page, o: { boxes?: boolean } = {}): Promise<string> {
  return page.ariaSnapshot({ mode: 'ai', timeout: SNAPSHOT_TIMEOUT_MS, ...(o.boxes ? { boxes: true } : {}) });
}

/** The element of a ref of the last snapshot; it fails to resolve once the page changed past it. */
export function locateRef(page: Page, ref: string): Locator {
  return page.locator(`aria-ref=${ref}`);
}

/** The ref of a locateRef() that timed out: its element is gone (the page changed since the snapshot) or was never there. */
export function missingRef(err: unknown): string | undefined {
  if (!(err instanceof Error) || err.name !== 'TimeoutError') return undefined;
  return /aria-ref=(\w+)/.exec(err.message)?.[1];
}
