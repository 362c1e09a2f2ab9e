// The Tools operations served by the shared fetch browsers: fetchWebpage, takeScreenshot,
// renderPagePdf. Sessionless: no session row, nothing counted against the concurrent-browser
// limit. Web fetch answers errors as `{error: string}` (500 in the general shape), is rate
// limited per API key and charges 0.005 credits per 200 to the usage ledger.
import type { Logger } from 'pino';
import { FETCH_CREDITS } from '../credits/prices.js';
import { charge } from '../credits/ledger.js';
import type { Config } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail, failText } from '../http/errors.js';
import { RateLimiter } from '../http/rate-limit.js';
import type { Db } from '../store/db.js';
import { ToolError, type ToolService } from './fetch.js';

export type ToolHandlers = Pick<AppHandlers, 'fetchWebpage' | 'takeScreenshot' | 'renderPagePdf'>;

export interface ToolDeps {
  db: Db;
  config: Pick<Config, 'fetchRatePerMinute'>;
  log: Logger;
  tools: ToolService;
}

export function toolHandlers({ db, config, log, tools }: ToolDeps): ToolHandlers {
  const fetchRate = new RateLimiter(config.fetchRatePerMinute);
  const screenshotRate = new RateLimiter(config.fetchRatePerMinute);
  const pdfRate = new RateLimiter(config.fetchRatePerMinute);

  const unexpected = (err: unknown, ctxLog: Logger) => {
    ctxLog.error({ err }, 'tool request failed');
    return fail(500, 'Internal server error');
  };

  return {
    async fetchWebpage(req, ctx) {
      const rate = fetchRate.take(ctx.apiKeyId);
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
      try {
        await charge(db, { projectId: ctx.projectId, kind: 'fetch', credits: FETCH_CREDITS });
      } catch (err) {
        // The page was fetched; a ledger failure is ours to fix, not the client's.
        log.error({ err, projectId: ctx.projectId }, 'could not record a web fetch charge');
      }
      if (result.kind === 'html') return { status: 200, contentType: 'text/html; charset=utf-8', body: result.html };
      return {
        status: 200,
        contentType: result.contentType,
        body: new Uint8Array(result.body.buffer, result.body.byteOffset, result.body.byteLength),
        ...(result.disposition ? { headers: { 'Content-Disposition': result.disposition } } : {}),
      };
    },

    async takeScreenshot(req, ctx) {
      const rate = screenshotRate.take(ctx.apiKeyId);
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
      const rate = pdfRate.take(ctx.apiKeyId);
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
