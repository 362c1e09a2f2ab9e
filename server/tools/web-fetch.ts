// The web fetch tool on a fresh context: the page, watched with 'spot'; a main document that
// turns out to be a file is fetched again with 'capture' for its bytes exactly as sent.
import { NetworkTracker } from '../page/readiness.js';
import { MainDocument, type Spotted } from './main-document.js';
import { foundFile, navigate } from './navigate.js';
import { renderPage, type FetchResult, type Visit } from './page-pipeline.js';
import { ToolError } from './tool-error.js';

/** The web fetch tool in its context: the rendered page, or the resource itself. */
export async function webFetch(v: Visit, url: URL, waitMs = 0): Promise<FetchResult> {
  const result = await load(v, url, waitMs);
  if (!('at' in result)) return result;
  // A file: fetched again with interception, for its bytes exactly as sent. The first page
  // stops (a large file would go on rendering as text); closing it the usual way sometimes
  // never returned for an image or JSON viewer page, this way (no unload handlers in such
  // a page) does not wait for it.
  await v.page.close({ runBeforeUnload: true }).catch(() => {});
  return capture(v, result.at);
}

/** The page at `url`, or the file there ('capture'), or where a file is ('spot'). */
async function load(v: Visit, url: URL, waitMs = 0): Promise<FetchResult | Spotted> {
  const found = await navigate(v.page, v.main, url, v.deadline, 'commit', v.pipeline.config);
  if (found) return foundFile(found, v.main);
  return renderPage(v, waitMs);
}

/** A file spotted on the way, loaded in a new page of the same context with interception. */
async function capture(v: Visit, at: string): Promise<FetchResult> {
  const page = await v.context.newPage();
  const tracker = new NetworkTracker(page);
  try {
    const main = await MainDocument.attach(v.context, page, 'capture', v.log);
    const result = await load({ ...v, page, main, tracker }, new URL(at));
    // 'capture' spots nothing: it takes the file itself.
    if ('at' in result) throw new ToolError(500, 'Internal server error');
    return result;
  } finally {
    tracker.dispose();
  }
}
