// The main document of a navigation, watched: its response (status, headers), the traffic
// proxy's refusal of a private destination, and a main document that is not a page (a
// file, a download), either spotted from Playwright's own network events or captured whole
// through CDP Fetch interception of the response.
import type { BrowserContext, CDPSession, Page, Response } from 'playwright-core';
import type { Logger } from 'pino';
import { attachmentHeader, fileNameOf, isDownload, isFile, isInlineType, type FileResult } from './files.js';

export const STATUS_TEXT: Record<number, string> = {
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** What the traffic proxy answers (plain HTTP) when it refuses a private destination. */
const PROXY_REFUSAL = /is a private address and the operator of this service has not allowed private networks/;

export interface MainResponse {
  url: string;
  status: number;
  statusText: string;
  headers: Record<string, string>;
}

/**
 * How a page's main documents are watched:
 * - 'watch': from Playwright's own network events, no CDP session of ours. Interception is
 *   not free: any Fetch.enable, even with a pattern that never matches, cost a page about
 *   50 ms of browser-process and 130 ms of renderer CPU on the script-rendered fixture
 *   (bench/fetch, measured per process), a sixth of the tool's throughput when busy.
 * - 'spot': as 'watch', and a main document that is not a page (a file, a download) is
 *   reported as soon as its headers arrive, so that it can be fetched again in 'capture'.
 * - 'capture': CDP Fetch interception at the response stage (documents only): a non-HTML
 *   main document is read whole and its navigation stopped; its bytes and headers are the
 *   result, exactly as the upstream sent them (no viewer in between, no size limit of the
 *   inspector's cache, downloads included).
 */
export type Watch = 'watch' | 'spot' | 'capture';

/** Where a file is, spotted by 'spot'. */
export interface Spotted {
  at: string;
}

/** What a navigation found instead of a page: the file itself ('capture'), or where one is ('spot'). */
export type Found = { file: FileResult } | Spotted;

export class MainDocument {
  last?: MainResponse;
  /** The URL of the last main-frame navigation request (the target of a redirect too). */
  lastRequestUrl?: string;
  refusedPrivate = false;
  file?: FileResult;
  private fileResolve!: (f: FileResult) => void;
  readonly captured = new Promise<FileResult>((r) => (this.fileResolve = r));
  /** 'spot': the URL of the first main document that is not a page. */
  spotted?: string;
  private spottedResolve!: (url: string) => void;
  readonly spottedFile = new Promise<string>((r) => (this.spottedResolve = r));
  private pending: Promise<void> = Promise.resolve();
  private mainFrameId = '';

  private constructor(
    private readonly mode: Watch,
    private readonly log: Logger,
    private readonly cdp?: CDPSession,
  ) {}

  static async attach(context: BrowserContext, page: Page, mode: Watch, log: Logger): Promise<MainDocument> {
    const cdp = mode === 'capture' ? await context.newCDPSession(page) : undefined;
    const doc = new MainDocument(mode, log, cdp);
    page.on('request', (r) => {
      if (r.isNavigationRequest() && r.frame() === page.mainFrame()) doc.lastRequestUrl = r.url();
    });
    if (!cdp) {
      page.on('response', (r) => {
        if (!r.request().isNavigationRequest() || r.frame() !== page.mainFrame()) return;
        doc.pending = doc.pending.then(() => doc.onResponse(r));
      });
      return doc;
    }
    const tree = (await cdp.send('Page.getFrameTree')) as { frameTree: { frame: { id: string } } };
    doc.mainFrameId = tree.frameTree.frame.id;
    cdp.on('Fetch.requestPaused', (e) => void doc.onPaused(e as unknown as Paused));
    await cdp.send('Fetch.enable', { patterns: [{ resourceType: 'Document', requestStage: 'Response' }] });
    return doc;
  }

  /** What was found instead of a page so far. */
  found(): Found | undefined {
    if (this.file) return { file: this.file };
    if (this.spotted) return { at: this.spotted };
    return undefined;
  }

  /** Once every response seen so far is looked at (the refusal check reads a body). */
  settled(): Promise<void> {
    return this.pending;
  }

  /** Records a main-document response, noting the traffic proxy's refusal; false for a redirect, passed over. */
  private async record(
    url: string,
    status: number,
    statusText: string,
    headers: Record<string, string>,
    text: () => Promise<string | undefined>,
  ): Promise<boolean> {
    if (status >= 300 && status < 400 && headers.location) return false;
    this.last = { url, status, statusText: statusText || STATUS_TEXT[status] || '', headers };
    if (status === 403 && (headers['content-type'] ?? '').startsWith('text/plain')) {
      // The traffic proxy's own refusal of a private destination (plain HTTP)?
      const body = await text().catch(() => undefined);
      if (body && PROXY_REFUSAL.test(body)) this.refusedPrivate = true;
    }
    return true;
  }

  private async onResponse(r: Response): Promise<void> {
    const headers = r.headers();
    if (!(await this.record(r.url(), r.status(), r.statusText(), headers, () => r.text()))) return;
    // An upstream failure is reported as such, not fetched again.
    if (this.mode === 'spot' && !this.spotted && !this.refusedPrivate && r.status() < 500 && isFile(headers)) {
      this.spotted = r.url();
      this.spottedResolve(this.spotted);
    }
  }

  private async onPaused(e: Paused): Promise<void> {
    const cdp = this.cdp!;
    const go = () => cdp.send('Fetch.continueRequest', { requestId: e.requestId }).catch(() => {});
    try {
      if (e.frameId !== this.mainFrameId || e.responseErrorReason || e.responseStatusCode === undefined) return void (await go());
      const status = e.responseStatusCode;
      const headers: Record<string, string> = {};
      for (const h of e.responseHeaders ?? []) {
        const k = h.name.toLowerCase();
        headers[k] = headers[k] !== undefined && k !== 'set-cookie' ? `${headers[k]}, ${h.value}` : h.value;
      }
      if (!(await this.record(e.request.url, status, e.responseStatusText ?? '', headers, async () => (await this.body(e.requestId)).toString('utf8'))))
        return void (await go());
      if (isFile(headers) && !this.file) {
        const body = await this.body(e.requestId);
        const contentType = headers['content-type'];
        const disposition = headers['content-disposition'];
        const type = contentType || 'application/octet-stream';
        const asFile = isDownload(headers) || !isInlineType(type);
        this.file = {
          kind: 'file',
          contentType: type,
          body,
          status,
          url: e.request.url,
          ...(asFile ? { disposition: attachmentHeader(fileNameOf(disposition, e.request.url)) } : {}),
        };
        this.fileResolve(this.file);
        await cdp.send('Fetch.failRequest', { requestId: e.requestId, errorReason: 'Aborted' }).catch(() => {});
        return;
      }
      await go();
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'main document interception failed; continuing');
      await go();
    }
  }

  private async body(requestId: string): Promise<Buffer> {
    const r = (await this.cdp!.send('Fetch.getResponseBody', { requestId })) as { body: string; base64Encoded: boolean };
    return Buffer.from(r.body, r.base64Encoded ? 'base64' : 'utf8');
  }
}

interface Paused {
  requestId: string;
  request: { url: string };
  frameId: string;
  resourceType: string;
  responseErrorReason?: string;
  responseStatusCode?: number;
  responseStatusText?: string;
  responseHeaders?: { name: string; value: string }[];
}
