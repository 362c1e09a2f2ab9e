// The content of a page of a running session (POST /v1/tools/fetch-webpage with a
// sessionId): the page at an index, a new tab, or the page on screen; navigated first when
// given a URL; read as the document's HTML.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningSession } from '../capability/index.js';
import { listPages, navigate } from '../browser/cdp-client.js';
import { PageSessions, activePage } from '../browser/pages.js';

export interface SessionPageRequest {
  url?: string;
  pageIndex?: number;
  newPage: boolean;
  waitMs: number;
  /** What the page holds when loading outlasts loadTimeoutMs, instead of a 504. */
  partialOnTimeout: boolean;
  loadTimeoutMs: number;
}

export class SessionPageError extends Error {
  constructor(
    readonly status: 400 | 409 | 502 | 504,
    message: string,
  ) {
    super(message);
  }
}

/** The document as a serializer sees it, doctype included, with its content type. */
const READ = `({
  contentType: document.contentType,
  html: (document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML,
})`;

export async function readSessionPage(s: RunningSession, r: SessionPageRequest): Promise<string> {
  const pages = new PageSessions(s.cdp);
  try {
    const targetId = await choosePage(s, pages, r);
    if (r.url) {
      try {
        await navigate(s.cdp, targetId, r.url, r.loadTimeoutMs);
      } catch (err) {
        const message = (err as Error).message;
        if (/^navigation failed: /.test(message))
          throw new SessionPageError(502, `The page could not be loaded: ${message.slice('navigation failed: '.length)}`);
        if (!/timed out/.test(message)) throw err;
        if (!r.partialOnTimeout) throw new SessionPageError(504, `The page did not load within ${r.loadTimeoutMs / 1000} seconds`);
      }
    }
    if (r.waitMs > 0) await sleep(r.waitMs);
    const { result } = await pages.send<{ result: { value?: { contentType: string; html: string } } }>(
      targetId,
      'Runtime.evaluate',
      { expression: READ, returnByValue: true },
      10_000,
    );
    const doc = result.value;
    if (!doc) throw new SessionPageError(502, 'The page could not be read');
    if (!/^(text\/html|application\/xhtml\+xml)$/.test(doc.contentType)) {
      throw new SessionPageError(400, `The page is not an HTML page (${doc.contentType})`);
    }
    return doc.html;
  } finally {
    await pages.close();
  }
}

async function choosePage(s: RunningSession, pages: PageSessions, r: SessionPageRequest): Promise<string> {
  if (r.pageIndex !== undefined) {
    // The order of GET /v1/sessions/{session_id}/pages.
    const all = await listPages(s.cdp);
    const page = all[r.pageIndex];
    if (!page) throw new SessionPageError(400, `page_index ${r.pageIndex}: the session has ${all.length} page${all.length === 1 ? '' : 's'}`);
    return page.targetId;
  }
  if (r.newPage) return (await s.cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId;
  const page = await activePage(s.cdp, pages);
  if (!page) throw new SessionPageError(409, 'The session has no page open');
  return page.targetId;
}
