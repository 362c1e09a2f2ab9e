// The web fetch tool and its two siblings (screenshot, page PDF): one pipeline on the shared
// fetch browsers.
//
//   check the URL (scheme, address policy, DNS) → a fresh context on a fetch browser (stealth
//   and autoconsent installed) → navigate, watching the main document's response through
//   CDP Fetch interception (status, headers, and for a non-HTML resource its original bytes)
//   → for a page: ready (readiness.ts) → challenges passed (challenges.ts) → consent
//   dismissed (consent.ts) → the rendered DOM; for anything else: the upstream bytes.
//
// Errors are ToolError with the status and message the handlers answer.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { browsersDirFor } from '../browser/index.js';
import type { BrowserContext, CDPSession, Page, Response } from 'playwright-core';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { assertPublicUrl, blockedRange, urlHost, UrlPolicyError } from '../net/address-policy.js';
import { CaptchaServiceClient, type CaptchaSolver } from '../page/captcha-adapter.js';
import { ChallengeError, challengeProbe, passChallenges, type DetectedChallenge } from '../page/challenges.js';
import { CONSENT_SIGNS_PROBE, ConsentTracker } from '../page/consent.js';
import { BrowsersClosedError, FetchBrowsers, QueueFullError, QueueTimeoutError } from './fetch-browsers.js';
import { inPageAll } from '../page/in-page.js';
import { NetworkTracker, readyThenProbe, waitForAnimations, waitForReady } from '../page/readiness.js';
import { stealthContextOptions, stealthScript } from '../page/stealth.js';

export type ToolErrorStatus = 400 | 403 | 429 | 500 | 502 | 504;

export class ToolError extends Error {
  constructor(
    readonly status: ToolErrorStatus,
    message: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

/** A non-HTML resource, as the upstream served it. */
export interface FileResult {
  kind: 'file';
  contentType: string;
  body: Buffer;
  /** `attachment; filename="…"` for PDFs and downloads. */
  disposition?: string;
  status: number;
}

export interface PageResult {
  kind: 'html';
  html: string;
  status: number;
  /** Challenges passed and consent dialogs dismissed, for the log. */
  challenges: string[];
  consent: string[];
}

export type FetchResult = FileResult | PageResult;

export type WaitUntil = 'load' | 'domcontentloaded' | 'networkidle';

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

export interface ToolServiceOptions {
  config: Pick<
    Config,
    | 'chromiumPath'
    | 'dataDir'
    | 'allowPrivateNetworks'
    | 'fetchBrowsers'
    | 'fetchMaxConcurrency'
    | 'fetchMaxQueue'
    | 'fetchTimeoutSeconds'
    | 'fetchProxyUrl'
    | 'captchaServiceUrl'
    | 'captchaServiceKey'
  >;
  log: Logger;
  /** Overrides the captcha service from the configuration (tests). */
  solver?: CaptchaSolver;
}

/** Types a browser shows as a page (everything else is returned as it came). */
function isHtmlType(contentType: string | undefined): boolean {
  if (!contentType) return true; // the browser sniffs; it renders what it can
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'text/html' || type === 'application/xhtml+xml';
}

/** Types returned as they are but not as a download. */
function isInlineType(contentType: string): boolean {
  const type = contentType.split(';')[0].trim().toLowerCase();
  return /^(text\/|image\/|application\/(.+\+)?(json|xml)$|application\/(javascript|ecmascript|x-javascript|ld\+json|manifest\+json|rss\+xml|atom\+xml)$)/.test(type);
}

/** The file name of a download: the upstream's Content-Disposition, else the URL's last segment. */
export function fileNameOf(disposition: string | undefined, url: string): string {
  if (disposition) {
    const star = /filename\*\s*=\s*(?:UTF-8|utf-8)?''([^;]+)/i.exec(disposition);
    if (star) {
      try {
        return decodeURIComponent(star[1].trim().replace(/^"|"$/g, ''));
      } catch {
        // fall through
      }
    }
    const plain = /filename\s*=\s*("([^"]*)"|[^;]+)/i.exec(disposition);
    if (plain) return (plain[2] ?? plain[1]).trim();
  }
  try {
    const seg = decodeURIComponent(new URL(url).pathname.split('/').filter(Boolean).pop() ?? '');
    if (seg) return seg;
  } catch {
    // fall through
  }
  return 'download';
}

/** `attachment; filename="…"`, with an RFC 5987 form for names outside ASCII. */
export function attachmentHeader(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const header = `attachment; filename="${ascii}"`;
  return ascii === name ? header : `${header}; filename*=UTF-8''${encodeURIComponent(name)}`;
}

const STATUS_TEXT: Record<number, string> = {
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/**
 * The error for a main document that is an upstream failure: a 5xx of the server, or one of
 * the 59x statuses the proxies (proxy-chain) answer for a connection they could not make.
 */
function upstreamFailure(last: MainResponse | undefined): ToolError | undefined {
  if (!last || last.status < 500) return undefined;
  let host = '';
  try {
    host = new URL(last.url).host;
  } catch {
    // keep empty
  }
  switch (last.status) {
    case 593:
      return new ToolError(502, `getaddrinfo ENOTFOUND ${host.replace(/:\d+$/, '')}`);
    case 594:
      return new ToolError(502, `Upstream error: ${host} refused the connection`);
    case 595:
    case 596:
      return new ToolError(502, `Upstream error: ${host} reset the connection`);
    case 597:
      return new ToolError(502, 'Upstream error: the upstream proxy refused its credentials');
  }
  if (last.status >= 590 && last.status <= 599) return new ToolError(502, `Upstream error: the connection to ${host} failed`);
  return new ToolError(502, `Upstream error: the server answered ${last.status} ${last.statusText || STATUS_TEXT[last.status] || ''}`.trim());
}

/** What the traffic proxy answers (plain HTTP) when it refuses a private destination. */
const PROXY_REFUSAL = /is a private address and the operator of this service has not allowed private networks/;

interface MainResponse {
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
type Watch = 'watch' | 'spot' | 'capture';

/** Where a file is, spotted by 'spot'. */
interface Spotted {
  at: string;
}

/** What a navigation found instead of a page: the file itself ('capture'), or where one is ('spot'). */
type Found = { file: FileResult } | Spotted;

class MainDocument {
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
  private async record(url: string, status: number, statusText: string, headers: Record<string, string>, text: () => Promise<string | undefined>): Promise<boolean> {
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
      if (!(await this.record(e.request.url, status, e.responseStatusText ?? '', headers, async () => (await this.body(e.requestId)).toString('utf8')))) return void (await go());
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

function isDownload(headers: Record<string, string>): boolean {
  const disposition = headers['content-disposition'];
  return disposition !== undefined && /^\s*attachment/i.test(disposition);
}

/** A main document the tool returns as it came rather than as a rendered page. */
function isFile(headers: Record<string, string>): boolean {
  return isDownload(headers) || !isHtmlType(headers['content-type']);
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

export class ToolService {
  readonly browsers: FetchBrowsers;
  private readonly solver?: CaptchaSolver;
  private readonly timeoutMs: number;

  constructor(private readonly o: ToolServiceOptions) {
    const { config, log } = o;
    this.browsers = new FetchBrowsers({
      chromiumPath: config.chromiumPath,
      browsers: config.fetchBrowsers,
      maxConcurrency: config.fetchMaxConcurrency,
      maxQueue: config.fetchMaxQueue,
      allowPrivateNetworks: config.allowPrivateNetworks,
      proxyUrl: config.fetchProxyUrl,
      browsersDir: browsersDirFor(config.dataDir),
      log,
    });
    this.solver =
      o.solver ??
      (config.captchaServiceUrl && config.captchaServiceKey
        ? new CaptchaServiceClient({ url: config.captchaServiceUrl, clientKey: config.captchaServiceKey })
        : undefined);
    this.timeoutMs = config.fetchTimeoutSeconds * 1000;
  }

  start(): Promise<void> {
    return this.browsers.start();
  }

  stop(): Promise<void> {
    return this.browsers.close();
  }

  private get timeoutSeconds(): number {
    return this.o.config.fetchTimeoutSeconds;
  }

  /** Scheme and address policy; DNS unless an upstream proxy resolves for us. Throws ToolError. */
  async checkUrl(input: string, what: 'fetch' | 'load'): Promise<URL> {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw new ToolError(400, `Invalid URL: ${input}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolError(400, `Only http and https URLs are supported: ${input}`);
    const host = urlHost(url);
    if (!host) throw new ToolError(400, `Invalid URL: ${input}`);
    const { allowPrivateNetworks, fetchProxyUrl } = this.o.config;
    const refused = (address: string) =>
      new ToolError(403, `Refused to ${what} a private, loopback or link-local address: ${address === host ? host : `${host} (${address})`}`);
    if (fetchProxyUrl) {
      // The upstream proxy resolves names; what can be checked here is an address literal.
      if (!allowPrivateNetworks && (isIP(host) ? blockedRange(host) !== null : /^localhost\.?$/i.test(host))) throw refused(host);
      return url;
    }
    if (!allowPrivateNetworks) {
      try {
        await assertPublicUrl(url, { allowPrivate: false });
      } catch (err) {
        if (err instanceof UrlPolicyError) {
          if (err.reason === 'private_address') throw refused(/resolves to (\S+),/.exec(err.message)?.[1] ?? host);
          if (err.reason === 'unresolvable') throw new ToolError(502, `getaddrinfo ENOTFOUND ${host}`);
          throw new ToolError(400, `Invalid URL: ${input}`);
        }
        throw err;
      }
    } else if (!isIP(host)) {
      try {
        await lookup(host, { all: true });
      } catch {
        throw new ToolError(502, `getaddrinfo ENOTFOUND ${host}`);
      }
    }
    return url;
  }

  /** The web fetch tool: the rendered page, or the resource itself. */
  async fetch(input: string, log: Logger): Promise<FetchResult> {
    const deadline = Date.now() + this.timeoutMs;
    const url = await this.checkUrl(input, 'fetch');
    return this.inContext(deadline, {}, 'spot', log, async (context, page, main, consent, tracker) => {
      const result = await this.load(page, main, consent, tracker, url, deadline, log);
      if (!('at' in result)) return result;
      // A file: fetched again with interception, for its bytes exactly as sent. The first page
      // stops (a large file would go on rendering as text); closing it the usual way sometimes
      // never returned for an image or JSON viewer page, this way (no unload handlers in such
      // a page) does not wait for it.
      await page.close({ runBeforeUnload: true }).catch(() => {});
      return this.capture(context, consent, result.at, deadline, log);
    });
  }

  /** The page at `url`, or the file there ('capture'), or where a file is ('spot'). */
  private async load(page: Page, main: MainDocument, consent: ConsentTracker, tracker: NetworkTracker, url: URL, deadline: number, log: Logger): Promise<FetchResult | Spotted> {
    const found = await this.navigate(page, main, url, deadline, 'commit');
    if (found) return this.foundFile(found, main);
    return this.renderPage(page, main, consent, tracker, deadline, log);
  }

  /** A file spotted on the way, loaded in a new page of the same context with interception. */
  private async capture(context: BrowserContext, consent: ConsentTracker, at: string, deadline: number, log: Logger): Promise<FetchResult> {
    const page = await context.newPage();
    const tracker = new NetworkTracker(page);
    try {
      const main = await MainDocument.attach(context, page, 'capture', log);
      const result = await this.load(page, main, consent, tracker, new URL(at), deadline, log);
      // 'capture' spots nothing: it takes the file itself.
      if ('at' in result) throw new ToolError(500, 'Internal server error');
      return result;
    } finally {
      tracker.dispose();
    }
  }

  async screenshot(o: ScreenshotOptions, log: Logger): Promise<Buffer> {
    const deadline = Date.now() + this.timeoutMs;
    const url = await this.checkUrl(o.url, 'load');
    return this.inContext(deadline, { viewport: { width: o.width, height: o.height } }, 'watch', log, async (context, page, main, consent, tracker) => {
      await this.prepare(page, main, consent, tracker, url, o.waitUntil, deadline, log);
      if (o.waitMs > 0) await page.waitForTimeout(Math.min(o.waitMs, Math.max(0, deadline - Date.now())));
      return this.withDeadline(deadline, async () => {
        if (!o.captureBeyondViewport) return page.screenshot({ type: 'png', fullPage: o.fullPage, timeout: Math.max(1, deadline - Date.now()) });
        const cdp = await context.newCDPSession(page);
        const metrics = (await cdp.send('Page.getLayoutMetrics')) as { cssContentSize: { width: number; height: number } };
        const clip = o.fullPage
          ? { x: 0, y: 0, width: Math.ceil(metrics.cssContentSize.width), height: Math.ceil(metrics.cssContentSize.height), scale: 1 }
          : { x: 0, y: 0, width: o.width, height: o.height, scale: 1 };
        const shot = (await cdp.send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true, clip })) as { data: string };
        return Buffer.from(shot.data, 'base64');
      });
    });
  }

  async pdf(o: PdfOptions, log: Logger): Promise<Buffer> {
    const deadline = Date.now() + this.timeoutMs;
    const url = await this.checkUrl(o.url, 'load');
    return this.inContext(deadline, {}, 'watch', log, async (_context, page, main, consent, tracker) => {
      await this.prepare(page, main, consent, tracker, url, o.waitUntil, deadline, log);
      return this.withDeadline(deadline, () =>
        page.pdf({
          format: o.format,
          landscape: o.landscape,
          printBackground: o.printBackground,
          scale: o.scale,
          margin: o.margin,
          pageRanges: o.pageRanges?.replace(/\s+/g, ''),
        }),
      );
    });
  }

  /** A fresh context with stealth and autoconsent, one page, the main-document watch. */
  private async inContext<T>(
    deadline: number,
    extra: { viewport?: { width: number; height: number } },
    watch: Watch,
    log: Logger,
    fn: (context: BrowserContext, page: Page, main: MainDocument, consent: ConsentTracker, tracker: NetworkTracker) => Promise<T>,
  ): Promise<T> {
    try {
      return await this.browsers.withContext(
        (browser) => ({
          // The window's own size unless asked: no emulation layer between page and window.
          viewport: extra.viewport ?? null,
          acceptDownloads: false,
          serviceWorkers: 'block',
          ...stealthContextOptions(browser),
        }),
        deadline,
        async ({ context }) => {
          await context.addInitScript({ content: stealthScript });
          const consent = await ConsentTracker.attach(context, log);
          const page = await context.newPage();
          const tracker = new NetworkTracker(page);
          const main = await MainDocument.attach(context, page, watch, log);
          try {
            return await fn(context, page, main, consent, tracker);
          } finally {
            tracker.dispose();
          }
        },
      );
    } catch (err) {
      if (err instanceof ToolError) throw err;
      if (err instanceof ChallengeError) throw new ToolError(err.status, err.message);
      if (err instanceof QueueFullError) throw new ToolError(429, err.message, { 'Retry-After': '1' });
      if (err instanceof QueueTimeoutError) throw new ToolError(504, `Upstream timed out after ${this.timeoutSeconds} seconds (waiting for a free browser)`);
      if (err instanceof BrowsersClosedError) throw new ToolError(500, 'Internal server error');
      throw err;
    }
  }

  /** Navigates; answers what it found when the main document is not a page. */
  private async navigate(page: Page, main: MainDocument, url: URL, deadline: number, waitUntil: 'commit' | WaitUntil): Promise<Found | undefined> {
    const nav = page
      .goto(url.href, { waitUntil: waitUntil === 'networkidle' ? 'load' : waitUntil, timeout: Math.max(1, deadline - Date.now()) })
      .then(() => undefined);
    const found = Promise.race([main.captured.then((file): Found => ({ file })), main.spottedFile.then((at): Found => ({ at }))]);
    const first = await Promise.race([found.then((f) => ({ f })), nav.then(() => ({ f: undefined }), (err: Error) => ({ err }))]);
    if ('f' in first && first.f) {
      // Settled (committed, or aborted by the capture) before anyone closes the page: closing
      // a page whose navigation is still pending never returns. goto's timeout bounds this.
      await nav.catch(() => {});
      return first.f;
    }
    if ('err' in first) {
      // A file ends the navigation (the capture aborts it; a download is no page): that may be reported first.
      const f = await Promise.race([found, new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]);
      if (f) return f;
      throw await this.navigationError(first.err, main, url, deadline);
    }
    await main.settled();
    if (main.refusedPrivate) throw new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${main.lastRequestUrl ? new URL(main.lastRequestUrl).host : url.host}`);
    return main.found();
  }

  private async navigationError(err: Error, main: MainDocument, url: URL, deadline: number): Promise<ToolError> {
    const message = String(err.message ?? err);
    if (err.name === 'TimeoutError' || /Timeout \d+ms exceeded/.test(message) || Date.now() >= deadline) {
      return new ToolError(504, `Upstream timed out after ${this.timeoutSeconds} seconds`);
    }
    const target = main.lastRequestUrl ? new URL(main.lastRequestUrl) : url;
    if (main.refusedPrivate) return new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${target.host}`);
    if (/ERR_NAME_NOT_RESOLVED/.test(message)) return new ToolError(502, `getaddrinfo ENOTFOUND ${urlHost(target)}`);
    if (/ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY_CONNECTION_FAILED|ERR_ACCESS_DENIED|ERR_BLOCKED/.test(message) && !this.o.config.allowPrivateNetworks && !this.o.config.fetchProxyUrl) {
      // The traffic proxy refuses private destinations (a redirect to one, say).
      try {
        await assertPublicUrl(target, { allowPrivate: false });
      } catch (e) {
        if (e instanceof UrlPolicyError && e.reason === 'private_address') {
          return new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${target.host}`);
        }
        if (e instanceof UrlPolicyError && e.reason === 'unresolvable') return new ToolError(502, `getaddrinfo ENOTFOUND ${urlHost(target)}`);
      }
    }
    const first = message.split('\n')[0].replace(/^page\.goto:\s*/, '').replace(/^Error:\s*/, '');
    return new ToolError(502, `Upstream error: ${first}`);
  }

  private foundFile(found: Found, main: MainDocument): FileResult | Spotted {
    if ('at' in found) return found;
    const failure = upstreamFailure(main.last);
    if (failure) throw failure;
    return found.file;
  }

  /** A page after navigation: ready, challenges passed, consent dismissed, then its DOM. */
  private async renderPage(page: Page, main: MainDocument, consent: ConsentTracker, tracker: NetworkTracker, deadline: number, log: Logger): Promise<FetchResult | Spotted> {
    // The first looks for a challenge and for consent signs ride on the last readiness check:
    // every round trip while the page is open costs it browser time, most of all under load.
    const status = () => main.last?.status ?? 200;
    const hint = status();
    const look = await readyThenProbe<{ challenge: DetectedChallenge | null; consent: boolean }>(
      page,
      tracker,
      { deadline },
      inPageAll({ challenge: challengeProbe(hint), consent: CONSENT_SIGNS_PROBE }),
    );
    const challenges = await passChallenges(page, {
      deadline,
      timeoutSeconds: this.timeoutSeconds,
      status,
      solver: this.solver,
      log,
      // Detection weighs the document's status: a script that navigated to a document of
      // another status meanwhile makes the probe's answer stale.
      first: status() === hint ? look?.challenge : undefined,
    });
    await main.settled();
    let found = main.found();
    if (found) return this.foundFile(found, main);
    if (challenges.length) await waitForReady(page, tracker, { deadline });
    // After a challenge the page is another one: its consent signs are looked at anew.
    const dismissed = (await consent.settle(page, deadline, undefined, challenges.length ? undefined : look?.consent)).dismissed;
    if (dismissed.length) {
      await waitForAnimations(page, Math.min(3000, deadline - Date.now()));
      await waitForReady(page, tracker, { deadline, maxSettleMs: 3000 });
    }
    await main.settled();
    found = main.found();
    if (found) return this.foundFile(found, main);
    const last = main.last;
    if (main.refusedPrivate) throw new ToolError(403, `Refused to fetch a private, loopback or link-local address: ${last ? new URL(last.url).host : ''}`);
    const failure = upstreamFailure(last);
    if (failure) throw failure;
    let html: string;
    try {
      html = await page.content();
    } catch {
      await page.waitForLoadState('load', { timeout: Math.max(1, Math.min(10_000, deadline - Date.now())) }).catch(() => {});
      html = await page.content();
    }
    if (challenges.length || dismissed.length) log.info({ challenges, consent: dismissed }, 'fetch passed challenges and consent dialogs');
    return { kind: 'html', html, status: last?.status ?? 200, challenges, consent: dismissed };
  }

  /** Screenshot and PDF: load as asked, pass challenges, dismiss consent. */
  private async prepare(
    page: Page,
    main: MainDocument,
    consent: ConsentTracker,
    tracker: NetworkTracker,
    url: URL,
    waitUntil: WaitUntil,
    deadline: number,
    log: Logger,
  ): Promise<void> {
    try {
      await this.navigate(page, main, url, deadline, waitUntil);
    } catch (err) {
      if (err instanceof ToolError && err.status === 502 && /Download is starting/.test(err.message)) {
        throw new ToolError(400, 'The URL answers a file download, which has no page to capture');
      }
      throw err;
    }
    const challenges = await passChallenges(page, {
      deadline,
      timeoutSeconds: this.timeoutSeconds,
      status: () => main.last?.status ?? 200,
      solver: this.solver,
      log,
    });
    if (challenges.length) await page.waitForLoadState(waitUntil === 'networkidle' ? 'load' : waitUntil, { timeout: Math.max(1, deadline - Date.now()) }).catch(() => {});
    if (waitUntil === 'networkidle' || challenges.length) await waitForReady(page, tracker, { deadline });
    const dismissed = (await consent.settle(page, deadline, waitUntil === 'networkidle' ? 8000 : 2000)).dismissed;
    if (dismissed.length) {
      await waitForAnimations(page, Math.min(3000, deadline - Date.now()));
      await waitForReady(page, tracker, { deadline, maxSettleMs: 2000 });
    }
    const last = main.last;
    if (main.refusedPrivate) throw new ToolError(403, 'Refused to load a private, loopback or link-local address');
    const failure = upstreamFailure(last);
    if (failure) throw failure;
  }

  private async withDeadline<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ToolError(504, `Page load timed out after ${this.timeoutSeconds} seconds`)), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([fn(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
