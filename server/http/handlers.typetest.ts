// Type-level tests, run by `pnpm typecheck` (tsc): each @ts-expect-error below must be an
// error, or tsc fails with "Unused '@ts-expect-error' directive". They prove that the
// generated Handlers type rejects a missing handler, an undocumented status and a wrong
// body shape, and that the 501 placeholders cover only operations documenting 501.
import type { Handlers, ReplaceSessionTagsResponse, FetchWebpageResponse, FetchPrimaryRecordingResponse } from '../../generated/handlers.js';
import type { AuthedContext, PublicContext } from './context.js';
import type { AppHandlers } from './app.js';
import { fail, failText } from './errors.js';

type H = Handlers<AuthedContext, PublicContext>;

// A documented status with its documented body type-checks.
export const ok: ReplaceSessionTagsResponse = { status: 200, body: { success: true, message: 'Tags replaced' } };
export const notFound: ReplaceSessionTagsResponse = fail(404, 'Session not found');

// @ts-expect-error 418 is not documented for replaceSessionTags
export const undocumented: ReplaceSessionTagsResponse = { status: 418, body: { error: { code: 418, message: 'teapot' } } };

// @ts-expect-error 409 is not documented for replaceSessionTags, even in the general shape
export const undocumentedFail: ReplaceSessionTagsResponse = fail(409, 'conflict');

// @ts-expect-error the 200 body needs `success`
export const wrongBody: ReplaceSessionTagsResponse = { status: 200, body: { message: 'Tags replaced' } };

// @ts-expect-error success must be a boolean
export const wrongType: ReplaceSessionTagsResponse = { status: 200, body: { success: 'yes' } };

// The fetch tool's 400 is `{error: string}`: the general shape does not fit it...
// @ts-expect-error the general error object is not the fetch tool's 400 body
export const wrongShape: FetchWebpageResponse = fail(400, 'Invalid URL');
// ...and its own shape does.
export const rightShape: FetchWebpageResponse = failText(400, 'Invalid URL');

// Binary responses need their content type and body; a required header must be present.
export const video: FetchPrimaryRecordingResponse = { status: 200, contentType: 'video/mp4', body: new Uint8Array() };
// @ts-expect-error a 206 must carry Content-Range
export const partialWithoutRange: FetchPrimaryRecordingResponse = { status: 206, contentType: 'video/mp4', body: new Uint8Array(), headers: {} };

// A handler map missing an operation does not type-check.
declare const all: AppHandlers;
const { replaceSessionTags: _omitted, ...rest } = all;
// @ts-expect-error replaceSessionTags is missing
export const missing: H = rest;

// A handler answering a wrong body does not type-check either.
export const wrongHandler: Pick<H, 'replaceSessionTags'> = {
  // @ts-expect-error tags must be answered as {success, message}, not as an array
  replaceSessionTags: (req) => ({ status: 200, body: req.body.tags }),
};
