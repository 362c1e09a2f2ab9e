// The Tools operations served by the shared fetch browsers: fetchWebpage, takeScreenshot,
// renderPagePdf. Sessionless: no session row, nothing counted against the concurrent-browser
// limit. Web fetch answers errors as `{error: string}` (500 in the general shape), is rate
// limited per API key and charges 0.005 credits per 200 to the usage ledger. The hosted
// vendor's content tool, fetchWebpageContent, is the same fetch answered as HTML or Markdown
// text, or reads a page of a running session instead (session-page.ts).
import type { Logger } from 'pino';
import { FETCH_CREDITS } from '../credits/prices.js';
import { charge } from '../credits/ledger.js';
import type { Config } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail, failText } from '../http/errors.js';
import type { RateLimits } from '../http/rate-limit/index.js';
import type { Db } from '../store/db.js';
import { isDatabaseUnavailable } from '../store/unavailable.js';
import type { SessionLookup } from '../sessions/index.js';
import { ToolError, type ToolService } from './fetch.js';
import { toMarkdown } from './markdown.js';
import { SessionPageError, readSessionPage } from './session-page.js';

export type ToolHandlers = Pick<AppHandlers, 'fetchWebpage' | 'fetchWebpageContent' | 'takeScreenshot' | 'renderPagePdf'>;

export interface ToolDeps {
  db: Db;
  config: Pick<Config, 'fetchRatePerMinute'>;
  log: Logger;
  tools: ToolService;
  sessions: SessionLookup;
  rateLimits: RateLimits;
}

/** What the content tool gives a page of a session to load, as the vendor's does. */
const SESSION_LOAD_TIMEOUT_MS = 20_000;

export function toolHandlers({ db, config, log, tools, sessions, rateLimits }: ToolDeps): ToolHandlers {
  const fetchRate = rateLimits.limiter('web_fetch', config.fetchRatePerMinute);
  const screenshotRate = rateLimits.limiter('screenshot', config.fetchRatePerMinute);
  const pdfRate = rateLimits.limiter('page_pdf', config.fetchRatePerMinute);

  const unexpected = (err: unknown, ctxLog: Logger) => {
    // The HTTP layer answers a database outage with 503.
    if (isDatabaseUnavailable(err)) throw err;
    ctxLog.error({ err }, 'tool request failed');
    return fail(500, 'Internal server error');
  };

  /** A 200 of the web fetch tool is billed; a ledger failure is ours to fix, not the client's. */
  const chargeFetch = async (projectId: string) => {
    try {
      await charge(db, { projectId, kind: 'fetch', credits: FETCH_CREDITS });
    } catch (err) {
      log.error({ err, projectId }, 'could not record a web fetch charge');
    }
  };

  return {
    async fetchWebpageContent(req, ctx) {
      const b = req.body;
      const text = (html: string) => ({ status: 200 as const, contentType: 'text/plain' as const, body: b.format === 'markdown' ? toMarkdown(html) : html });
      const sessionId = req.query.sessionId;
      if (sessionId === undefined) {
        if (!b.url) return fail(400, 'url is required unless a sessionId names the session whose page to read');
        if (b.new_page || b.page_index !== undefined || b.return_partial_on_timeout) {
          return fail(400, 'new_page, page_index and return_partial_on_timeout read a page of a session: give its sessionId');
        }
        const rate = await fetchRate.take(ctx.apiKeyId);
        if (!rate.allowed) return { ...fail(429, 'Rate limit exceeded'), headers: { 'Retry-After': String(rate.retryAfterSeconds) } };
        let result;
        try {
          result = await tools.fetch(b.url, ctx.log, b.wait ?? 0);
        } catch (err) {
          if (err instanceof ToolError) return { ...fail(err.status, err.message), ...(err.headers ? { headers: err.headers } : {}) };
          return unexpected(err, ctx.log);
        }
        if (result.kind !== 'html') return fail(400, `The URL answers ${result.contentType}, not an HTML page; POST /v1/tools/fetch/webpage answers files`);
        await chargeFetch(ctx.projectId);
        return text(result.html);
      }
      const s = await sessions.lookup(ctx.projectId, sessionId);
      if ('status' in s) return fail(s.status, s.message);
      try {
        if (b.url) await tools.checkUrl(b.url, 'load');
        sessions.touch(s.id, 'input');
        const html = await readSessionPage(s, {
          url: b.url,
          pageIndex: b.page_index,
          newPage: b.new_page ?? false,
          waitMs: b.wait ?? 0,
          partialOnTimeout: b.return_partial_on_timeout ?? false,
          loadTimeoutMs: SESSION_LOAD_TIMEOUT_MS,
        });
        return text(html);
      } catch (err) {
        if (err instanceof ToolError || err instanceof SessionPageError) return fail(err.status, err.message);
        // The session ended under the read.
        if (!sessions.get(s.id)) return fail(409, 'Session is not running');
        return unexpected(err, ctx.log);
      }
    },

    async fetchWebpage(req, ctx) {
      const rate = await fetchRate.take(ctx.apiKeyId);
      if (!rate.allowed) return { ...failText(429, 'Rate limit exceeded'), headers: { 'Retry-After': String(rate.retryAfterSeconds) } };
      let result;
      try {
        result = await tools.fetch(req.body.url, ctx.log);
      } catch (err) {
        if (err instanceof ToolError) {
          if (err.status === 500) return fail(500, err.message);
          return { ...failText(err.status, err.message), ...(err.headers ? { headers: err.headers } : {}) };
        }
        return unexpected(err, ctx.log);
      }
      await chargeFetch(ctx.projectId);
      // What the upstream answered, so that a 404 page rendered as this 200 is recognisable.
      const upstream = { 'X-Upstream-Status': String(result.status), 'X-Upstream-Url': result.url };
      if (result.kind === 'html') return { status: 200, contentType: 'text/html; charset=utf-8', body: result.html, headers: upstream };
      return {
        status: 200,
        contentType: result.contentType,
        body: new Uint8Array(result.body.buffer, result.body.byteOffset, result.body.byteLength),
        headers: { ...upstream, ...(result.disposition ? { 'Content-Disposition': result.disposition } : {}) },
      };
    },

    async takeScreenshot(req, ctx) {
      const rate = await screenshotRate.take(ctx.apiKeyId);
      if (!rate.allowed) return { ...fail(429, 'Rate limit exceeded'), headers: { 'Retry-After': String(rate.retryAfterSeconds) } };
      const b = req.body;
      try {
        const png = await tools.screenshot(
          {
            url: b.url,
            width: b.width ?? 1280,
            height: b.height ?? 720,
            fullPage: b.full_page ?? false,
            waitUntil: b.wait_until ?? 'load',
            waitMs: b.wait_ms ?? 0,
            captureBeyondViewport: b.capture_beyond_viewport ?? false,
          },
          ctx.log,
        );
        return { status: 200, contentType: 'image/png', body: new Uint8Array(png.buffer, png.byteOffset, png.byteLength) };
      } catch (err) {
        if (err instanceof ToolError) return { ...fail(err.status, err.message), ...(err.headers ? { headers: err.headers } : {}) };
        return unexpected(err, ctx.log);
      }
    },

    async renderPagePdf(req, ctx) {
      const rate = await pdfRate.take(ctx.apiKeyId);
      if (!rate.allowed) return { ...fail(429, 'Rate limit exceeded'), headers: { 'Retry-After': String(rate.retryAfterSeconds) } };
      const b = req.body;
      try {
        const pdf = await tools.pdf(
          {
            url: b.url,
            format: b.format ?? 'Letter',
            landscape: b.landscape ?? false,
            printBackground: b.print_background ?? false,
            scale: b.scale ?? 1,
            margin: b.margin,
            pageRanges: b.page_ranges,
            waitUntil: b.wait_until ?? 'load',
          },
          ctx.log,
        );
        return { status: 200, contentType: 'application/pdf', body: new Uint8Array(pdf.buffer, pdf.byteOffset, pdf.byteLength) };
      } catch (err) {
        if (err instanceof ToolError) return { ...fail(err.status, err.message), ...(err.headers ? { headers: err.headers } : {}) };
        return unexpected(err, ctx.log);
      }
    },
  };
}
