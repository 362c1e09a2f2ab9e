// The web fetch tool on a fresh context: the page, watched with 'spot'; a main document that
// turns out to be a file is fetched again with 'capture' for its bytes exactly as sent.
import type { BrowserContext, Page } from 'playwright-core';
import type { Logger } from 'pino';
import type { ConsentTracker } from '../page/consent.js';
import { NetworkTracker } from '../page/readiness.js';
import { MainDocument, type Spotted } from './main-document.js';
import { foundFile, navigate } from './navigate.js';
import { renderPage, type FetchResult, type Pipeline } from './page-pipeline.js';
import { ToolError } from './tool-error.js';

/** The web fetch tool in its context: the rendered page, or the resource itself. */
export async function webFetch(
  context: BrowserContext,
  page: Page,
  main: MainDocument,
  consent: ConsentTracker,
  tracker: NetworkTracker,
  url: URL,
  deadline: number,
  log: Logger,
  pipeline: Pipeline,
  waitMs = 0,
): Promise<FetchResult> {
  const result = await load(page, main, consent, tracker, url, deadline, log, pipeline, waitMs);
  if (!('at' in result)) return result;
  // A file: fetched again with interception, for its bytes exactly as sent. The first page
  // stops (a large file would go on rendering as text); closing it the usual way sometimes
  // never returned for an image or JSON viewer page, this way (no unload handlers in such
  // a page) does not wait for it.
  await page.close({ runBeforeUnload: true }).catch(() => {});
  return capture(context, consent, result.at, deadline, log, pipeline);
}

/** The page at `url`, or the file there ('capture'), or where a file is ('spot'). */
async function load(
  page: Page,
  main: MainDocument,
  consent: ConsentTracker,
  tracker: NetworkTracker,
  url: URL,
  deadline: number,
  log: Logger,
  pipeline: Pipeline,
  waitMs = 0,
): Promise<FetchResult | Spotted> {
  const found = await navigate(page, main, url, deadline, 'commit', pipeline.config);
  if (found) return foundFile(found, main);
  return renderPage(page, main, consent, tracker, deadline, log, pipeline, waitMs);
}

/** A file spotted on the way, loaded in a new page of the same context with interception. */
async function capture(context: BrowserContext, consent: ConsentTracker, at: string, deadline: number, log: Logger, pipeline: Pipeline): Promise<FetchResult> {
  const page = await context.newPage();
  const tracker = new NetworkTracker(page);
  try {
    const main = await MainDocument.attach(context, page, 'capture', log);
    const result = await load(page, main, consent, tracker, new URL(at), deadline, log, pipeline);
    // 'capture' spots nothing: it takes the file itself.
    if ('at' in result) throw new ToolError(500, 'Internal server error');
    return result;
  } finally {
    tracker.dispose();
  }
}
