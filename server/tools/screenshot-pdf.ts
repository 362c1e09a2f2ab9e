// The screenshot and page PDF tools: the page prepared (page-pipeline.ts), then captured as
// asked, within the request's deadline.
import type { Config } from '../config/config.js';
import { withDeadline } from './deadline.js';
import type { WaitUntil } from './navigate.js';
import { prepare, type Visit } from './page-pipeline.js';
import { ToolError } from './tool-error.js';

export interface ScreenshotOptions {
  url: string;
  width: number;
  height: number;
  fullPage: boolean;
  waitUntil: WaitUntil;
  waitMs: number;
  captureBeyondViewport: boolean;
}

export interface PdfOptions {
  url: string;
  format: string;
  landscape: boolean;
  printBackground: boolean;
  scale: number;
  margin?: { top?: string; right?: string; bottom?: string; left?: string };
  pageRanges?: string;
  waitUntil: WaitUntil;
}

/** A screenshot (PNG) of the page at `url`, once prepared. */
export async function screenshotOf(v: Visit, url: URL, o: ScreenshotOptions): Promise<Buffer> {
  const { context, page, deadline, pipeline } = v;
  await prepare(v, url, o.waitUntil);
  if (o.waitMs > 0) await page.waitForTimeout(Math.min(o.waitMs, Math.max(0, deadline - Date.now())));
  return withDeadline(deadline, pageLoadTimedOut(pipeline.config), async () => {
    if (!o.captureBeyondViewport) return page.screenshot({ type: 'png', fullPage: o.fullPage, timeout: Math.max(1, deadline - Date.now()) });
    const cdp = await context.newCDPSession(page);
    const metrics = (await cdp.send('Page.getLayoutMetrics')) as { cssContentSize: { width: number; height: number } };
    const clip = o.fullPage
      ? { x: 0, y: 0, width: Math.ceil(metrics.cssContentSize.width), height: Math.ceil(metrics.cssContentSize.height), scale: 1 }
      : { x: 0, y: 0, width: o.width, height: o.height, scale: 1 };
    const shot = (await cdp.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true, clip })) as { data: string };
    return Buffer.from(shot.data, 'base64');
  });
}

/** The page at `url` printed to PDF, once prepared. */
export async function pdfOf(v: Visit, url: URL, o: PdfOptions): Promise<Buffer> {
  const { page, deadline, pipeline } = v;
  const margin = marginRefusal(o.margin);
  if (margin) throw new ToolError(400, margin);
  await prepare(v, url, o.waitUntil);
  return withDeadline(deadline, pageLoadTimedOut(pipeline.config), () =>
    page
      .pdf({
        format: o.format,
        landscape: o.landscape,
        printBackground: o.printBackground,
        scale: o.scale,
        margin: o.margin,
        pageRanges: o.pageRanges?.replace(/\s+/g, ''),
      })
      .catch((err: unknown) => {
        const refusal = printRefusal(err);
        throw refusal ? new ToolError(400, refusal) : err;
      }),
  );
}

const NO_ROOM = 'margin leaves no room for the page on the paper: make the margins smaller than the paper';

/**
 * Print options the contract lets through but Chromium refuses once it has the page: only
 * the document knows its page count, and margins that leave no room depend on the paper
 * size. The client's to change, so 400 with what to change (they were 500s).
 */
export function printRefusal(err: unknown): string | undefined {
  const message = err instanceof Error ? err.message : '';
  if (message.includes('Page range exceeds page count')) return 'page_ranges names a page past the last page of the document';
  if (/Page range is invalid|Page range syntax error/.test(message)) {
    return 'page_ranges is invalid: pages are numbered from 1, and a range cannot end before it starts';
  }
  if (message.includes('content area is empty')) return NO_ROOM;
  return undefined;
}

/**
 * A margin the contract's pattern lets through but no number can hold: past ~308 digits it
 * reads as Infinity, which reaches Chromium as null ("Invalid parameters", a 500). Wider than
 * any paper, so refused as the margins Chromium finds too wide are, before the page loads.
 */
export function marginRefusal(margin: PdfOptions['margin']): string | undefined {
  const sides = Object.values(margin ?? {}).filter((m): m is string => typeof m === 'string');
  if (sides.some((m) => !Number.isFinite(Number.parseFloat(m)))) return NO_ROOM;
  return undefined;
}

const pageLoadTimedOut = (config: Pick<Config, 'fetchTimeoutSeconds'>) => () =>
  new ToolError(504, `Page load timed out after ${config.fetchTimeoutSeconds} seconds`);
