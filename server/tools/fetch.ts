// The web fetch tool and its two siblings (screenshot, page PDF): one pipeline on the shared
// fetch browsers.
//
//   check the URL (scheme, address policy, DNS; check-url.ts) → a fresh context on a fetch
//   browser (stealth and autoconsent installed) → navigate (navigate.ts), watching the main
//   document's response through CDP Fetch interception (main-document.ts: status, headers,
//   and for a non-HTML resource its original bytes) → for a page (page-pipeline.ts): ready
//   (readiness.ts) → challenges passed (challenges.ts) → consent dismissed (consent.ts) → the
//   rendered DOM; for anything else: the upstream bytes (web-fetch.ts). Screenshot and PDF
//   capture the prepared page (screenshot-pdf.ts).
//
// Errors are ToolError (tool-error.ts) with the status and message the handlers answer.
// This module is the service: it owns the fetch browsers and their queue, and gives each
// request its fresh context.
import { browsersDirFor } from '../browser/index.js';
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config/config.js';
import { configuredCaptchaService, type CaptchaSolver } from '../page/captcha-adapter.js';
import { ChallengeError } from '../page/challenges.js';
import { ConsentTracker } from '../page/consent.js';
import { NetworkTracker } from '../page/readiness.js';
import { stealthContextOptions, stealthScript } from '../page/stealth.js';
import { checkUrl } from './check-url.js';
import { withDeadline } from './deadline.js';
import { BrowsersClosedError, FetchBrowsers, QueueFullError, QueueTimeoutError } from './fetch-browsers.js';
import { MainDocument, type Watch } from './main-document.js';
import type { FetchResult, Pipeline, Visit } from './page-pipeline.js';
import { pdfOf, screenshotOf, type PdfOptions, type ScreenshotOptions } from './screenshot-pdf.js';
import { ToolError } from './tool-error.js';
import { webFetch } from './web-fetch.js';

export { attachmentHeader, fileNameOf, type FileResult } from './files.js';
export type { WaitUntil } from './navigate.js';
export type { FetchResult, PageResult } from './page-pipeline.js';
export type { PdfOptions, ScreenshotOptions } from './screenshot-pdf.js';
export { ToolError, type ToolErrorStatus } from './tool-error.js';

export interface ToolServiceOptions {
  config: Pick<
    ServiceConfig,
    | 'chromiumPath'
    | 'browserSandbox'
    | 'browserCaps'
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

export class ToolService {
  readonly browsers: FetchBrowsers;
  private readonly pipeline: Pipeline;
  private readonly timeoutMs: number;

  constructor(private readonly o: ToolServiceOptions) {
    const { config, log } = o;
    this.browsers = new FetchBrowsers({
      chromiumPath: config.chromiumPath,
      sandbox: config.browserSandbox === 'on',
      ...(config.browserCaps ? { cgroup: config.browserCaps } : {}),
      browsers: config.fetchBrowsers,
      maxConcurrency: config.fetchMaxConcurrency,
      maxQueue: config.fetchMaxQueue,
      allowPrivateNetworks: config.allowPrivateNetworks,
      proxyUrl: config.fetchProxyUrl,
      browsersDir: browsersDirFor(config.dataDir),
      log,
    });
    this.pipeline = {
      config,
      solver: o.solver ?? configuredCaptchaService(config),
    };
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
    return checkUrl(input, what, this.o.config);
  }

  /** The web fetch tool: the rendered page (read `waitMs` after it is ready), or the resource itself. */
  async fetch(input: string, log: Logger, waitMs = 0): Promise<FetchResult> {
    const deadline = Date.now() + this.timeoutMs;
    const url = await this.checkUrl(input, 'fetch');
    return this.inContext(deadline, {}, 'spot', log, (v) => webFetch(v, url, waitMs));
  }

  async screenshot(o: ScreenshotOptions, log: Logger): Promise<Buffer> {
    const deadline = Date.now() + this.timeoutMs;
    const url = await this.checkUrl(o.url, 'load');
    return this.inContext(deadline, { viewport: { width: o.width, height: o.height } }, 'watch', log, (v) => screenshotOf(v, url, o));
  }

  async pdf(o: PdfOptions, log: Logger): Promise<Buffer> {
    const deadline = Date.now() + this.timeoutMs;
    const url = await this.checkUrl(o.url, 'load');
    return this.inContext(deadline, {}, 'watch', log, (v) => pdfOf(v, url, o));
  }

  /** A fresh context with stealth and autoconsent, one page, the main-document watch. */
  private async inContext<T>(
    deadline: number,
    extra: { viewport?: { width: number; height: number } },
    watch: Watch,
    log: Logger,
    fn: (v: Visit) => Promise<T>,
  ): Promise<T> {
    try {
      // The whole of it, a browser's launch included, within FETCH_TIMEOUT_SECONDS: a launch
      // does not watch the deadline (22 s for a 3 s limit on a loaded machine). A moment after
      // it, so that the steps that do watch it (the queue, the navigation) answer first, saying
      // where the time went.
      return await withDeadline(
        deadline + 250,
        () => new ToolError(504, `Upstream timed out after ${this.timeoutSeconds} seconds`),
        () =>
          this.browsers.withContext(
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
                return await fn({ context, page, main, consent, tracker, deadline, log, pipeline: this.pipeline });
              } finally {
                tracker.dispose();
              }
            },
          ),
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
}
