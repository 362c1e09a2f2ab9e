// Web fetch (docs/conformance-rules.md): F1–F8 and F10 (F9, billing, is in billing.ts).
//
// The pages, files and challenges come from the fixture site of fixtures/server.ts, mounted
// on the suite's own fixture server (ctx.fixtures: its static files include fixtures/site/,
// its routes get the site's dynamic paths), so --fixtures-url works for a server under test
// that runs elsewhere.
//
// Order: F10 exhausts the run key's fetch allowance for up to a minute, so it runs last.
import { createHash } from 'node:crypto';
import { fixtureBinary, fixtureJson, fixturePdf, fixturePng, fixtureRoutes, fixtureText, handleFixtureRequest } from '../../fixtures/server.js';
import type { SuiteContext } from '../context.js';
import { describe as line, send, type HttpResponse } from '../http.js';
import { check, defineRules, type T } from '../runner.js';

/** A fetch may take up to about two minutes (a challenge to solve). */
const FETCH_TIMEOUT_MS = 130_000;
const PATH = '/v1/tools/fetch/webpage';
/** F10: requests in flight at once, and the most sent before giving up on seeing a 429. */
const F10_WORKERS = 16;
const F10_MAX = 6_000;
const F10_MAX_MS = 60_000;

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

export default defineRules((ctx: SuiteContext) => {
  let mounted = false;
  const fixture = async (path: string): Promise<string> => {
    if (!mounted) {
      mounted = true;
      for (const r of fixtureRoutes()) {
        ctx.fixtures.route(r.method, r.path, async (req, res, body) => {
          if (!(await handleFixtureRequest(req, res, body))) res.writeHead(404).end();
        });
      }
    }
    return ctx.fixtures.url(path);
  };

  const fetchTool = async (t: T, url: string, key: string | undefined = ctx.mainKey): Promise<HttpResponse> => {
    try {
      return await send({
        method: 'POST',
        url: ctx.baseUrl + PATH,
        headers: { 'content-type': 'application/json', ...(key ? { 'service-api-key': key } : {}) },
        body: JSON.stringify({ url }),
        timeoutMs: Math.max(ctx.timeoutMs, FETCH_TIMEOUT_MS),
      });
    } catch (err) {
      return t.fail(`POST ${PATH} for ${url}: ${(err as Error).message}`);
    }
  };
  const show = (res: HttpResponse) => line({ method: 'POST', url: ctx.baseUrl + PATH }, res, 300);
  const disposition = (res: HttpResponse) => res.headers.get('content-disposition') ?? '';

  /** A 200 with exactly these bytes and this media type. */
  const sameResource = (t: T, res: HttpResponse, what: string, type: string, bytes: Uint8Array) => {
    t.assert(res.status === 200, `${what}: ${show(res)}`);
    t.equal(res.contentType, type, `${what}: the upstream content type`);
    t.assert(sha(res.bytes) === sha(bytes), `${what}: ${res.bytes.length} bytes that differ from the upstream's ${bytes.length}`);
  };

  const consentCheck = (library: string, page: string) =>
    check(`F2 cookie-consent dialog dismissed: ${library}`, async (t: T) => {
      const res = await fetchTool(t, await fixture(`/site/consent/${page}.html`));
      t.assert(res.status === 200, show(res));
      t.assert(res.text.includes('id="article"'), 'the page content is missing');
      // The page records, as it sees it, the decision stored by the library and whether the
      // library's dialog is still visible.
      const m = /id="consent-state" data-decision="([^"]+)" data-dialog="([^"]+)"/.exec(res.text);
      t.assert(m, 'the page has no consent state (did its scripts run?)');
      t.assert(m[1] !== 'pending', `no consent decision was made: the ${library} dialog was not dismissed`);
      t.equal(m[2], 'hidden', `the ${library} dialog is still visible in the returned page`);
      t.note(`decision ${m[1]}, dialog ${m[2]}`);
    });

  return [
    check('F1 an HTML page answers 200 text/html with the DOM after JavaScript ran', async (t: T) => {
      const res = await fetchTool(t, await fixture('/site/script-rendered.html'));
      t.assert(res.status === 200, show(res));
      t.equal(res.contentType, 'text/html', 'the content type');
      t.assert(res.text.includes('id="rendered">Rendered by script: fixture #42'), 'the content the page inserts by script is missing');
      t.assert(/<li class="item">item a<\/li>/.test(res.text), 'the list the page builds from its API call is missing');
    }),

    consentCheck('vanilla-cookieconsent', 'vanilla'),
    consentCheck('Klaro', 'klaro'),
    consentCheck('cookieconsent (Osano)', 'osano'),
    consentCheck('tarteaucitron.js', 'tarteaucitron'),

    check('F3 a bot-detection interstitial is passed: the page behind it is returned', async (t: T) => {
      const res = await fetchTool(t, await fixture('/challenge/js'));
      t.assert(res.status === 200, show(res));
      t.assert(!res.text.includes('Just a moment'), 'the interstitial was returned');
      t.assert(res.text.includes('id="protected">You passed the JavaScript check.'), 'the page behind the interstitial is missing');
    }),

    check('F3 a proof-of-work captcha interstitial is passed: the page behind it is returned', async (t: T) => {
      const res = await fetchTool(t, await fixture('/challenge/pow'));
      t.assert(res.status === 200, show(res));
      t.assert(!res.text.includes('<altcha-widget'), 'the interstitial was returned');
      t.assert(res.text.includes('id="protected">Proof of work accepted.'), 'the page behind the interstitial is missing');
    }),

    check('F4 a PDF answers the original bytes and type with Content-Disposition: attachment', async (t: T) => {
      const res = await fetchTool(t, await fixture('/files/report.pdf'));
      sameResource(t, res, 'the PDF', 'application/pdf', fixturePdf);
      t.assert(/^attachment\b/i.test(disposition(res)), `Content-Disposition is "${disposition(res)}", not attachment`);
      t.note(disposition(res));
    }),

    check('F4 a download answers the original bytes and type with Content-Disposition: attachment', async (t: T) => {
      const res = await fetchTool(t, await fixture('/files/archive.bin'));
      sameResource(t, res, 'the download', 'application/octet-stream', fixtureBinary);
      t.assert(/^attachment\b/i.test(disposition(res)), `Content-Disposition is "${disposition(res)}", not attachment`);
      t.note(disposition(res));
    }),

    check('F5 JSON, an image and text keep the upstream content type and bytes', async (t: T) => {
      sameResource(t, await fetchTool(t, await fixture('/api/data.json')), 'the JSON', 'application/json', Buffer.from(fixtureJson));
      sameResource(t, await fetchTool(t, await fixture('/images/pixel.png')), 'the image', 'image/png', fixturePng);
      sameResource(t, await fetchTool(t, await fixture('/text/notes.txt')), 'the text', 'text/plain', Buffer.from(fixtureText));
    }),

    check('F6 the response body is the resource itself, not JSON-wrapped', async (t: T) => {
      const page = await fetchTool(t, await fixture('/site/script-rendered.html'));
      t.assert(page.status === 200, show(page));
      t.assert(/^\s*(<!doctype html|<html)/i.test(page.text), `the HTML answer starts with ${JSON.stringify(page.text.slice(0, 40))}`);
      const json = await fetchTool(t, await fixture('/api/data.json'));
      t.assert(json.status === 200, show(json));
      t.equal(json.text, fixtureJson, 'the JSON answer is the upstream document, byte for byte');
    }),

    check('F7 fetch creates no session and works while the concurrent-browser limit is reached', async (t: T) => {
      const billingOp = ctx.contract.operation('getBilling');
      const billing = await ctx.call(await ctx.build(billingOp));
      const limit = (billing.response?.json as { data?: { max_concurrent_browsers?: unknown } } | undefined)?.data?.max_concurrent_browsers;
      if (typeof limit !== 'number') t.skip(`GET /v1/billing did not say max_concurrent_browsers (${billing.response?.status ?? billing.error})`);
      if (limit > 12) t.skip(`the concurrent-browser limit is ${limit}; reaching it takes more browsers than this check starts (at most 12)`);
      const createOp = ctx.contract.operation('createSession');
      const made: string[] = [];
      const end = async () => {
        const endOp = ctx.contract.operation('endSession');
        for (const id of made.splice(0)) await ctx.call(await ctx.build(endOp, { pathParams: { session_id: id } }));
      };
      const sessionCount = async () => {
        const res = await send({
          method: 'GET',
          url: `${ctx.baseUrl}/v1/sessions?limit=1`,
          headers: { 'service-api-key': ctx.mainKey ?? '' },
          timeoutMs: ctx.timeoutMs,
        });
        const total = (res.json as { pagination?: { total?: unknown } } | undefined)?.pagination?.total;
        t.assert(res.status === 200 && typeof total === 'number', `GET /v1/sessions: ${line({ method: 'GET', url: `${ctx.baseUrl}/v1/sessions` }, res)}`);
        return total;
      };
      try {
        let refused: HttpResponse | undefined;
        for (let i = 0; i <= limit && !refused; i++) {
          const ex = await ctx.call(await ctx.build(createOp), {
            bodyValue: { browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 2, max_duration: 5 } } },
          });
          const res = ex.response;
          t.assert(res, `POST /v1/sessions: ${ex.error}`);
          const id = (res.json as { data?: { id?: string } } | undefined)?.data?.id;
          if (res.status === 200 && id) made.push(id);
          else if (res.status === 429) refused = res;
          else t.fail(`POST /v1/sessions while filling the limit: ${line(ex.request, res)}`);
        }
        t.assert(refused, `${made.length} sessions were created without reaching the limit of ${limit}`);
        const before = await sessionCount();
        const res = await fetchTool(t, await fixture('/site/script-rendered.html'));
        t.assert(res.status === 200, `with the concurrent-browser limit reached: ${show(res)}`);
        t.assert(res.text.includes('Rendered by script'), 'the page was not rendered');
        t.equal(await sessionCount(), before, 'the number of sessions after a fetch');
        t.note(`${made.length} sessions running (limit ${limit}); the fetch answered 200 and created no session`);
      } finally {
        await end();
      }
    }),

    check('F8 a host that does not resolve answers the documented error {error: string}', async (t: T) => {
      const op = ctx.contract.operation('fetchWebpage');
      const res = await fetchTool(t, 'http://no-such-host.invalid/');
      t.assert(res.status >= 400 && res.status < 600, show(res));
      const documented = ctx.contract.response(op, res.status);
      t.assert(documented, `${res.status} is not a documented status of fetchWebpage`);
      const body = res.json as { error?: unknown } | undefined;
      t.assert(body && typeof body.error === 'string' && body.error.length > 0, `the body is not {error: string}: ${res.text.slice(0, 200)}`);
      const schema = documented.response.content?.['application/json']?.schema;
      const problem = schema ? ctx.contract.validate(schema, res.json, 'body') : undefined;
      t.assert(!problem, `the body does not match the documented ${res.status} answer: ${problem}`);
      t.note(`${res.status} ${res.text}`);
    }),

    check('F10 the web fetch rate limit is counted per API key: past it 429, another key unaffected', async (t: T) => {
      const other = await ctx.otherKey();
      if (!other.key) t.skip(`no second key: ${other.reason}`);
      // Requests the server refuses at once (a URL that is not one) count like any other.
      const started = Date.now();
      let sent = 0;
      let limited: HttpResponse | undefined;
      await Promise.all(
        Array.from({ length: F10_WORKERS }, async () => {
          while (!limited && sent < F10_MAX && Date.now() - started < F10_MAX_MS) {
            sent++;
            const res = await fetchTool(t, 'not a url');
            if (res.status === 429) limited ??= res;
            else t.assert(res.status === 400, `an invalid URL answered ${show(res)}`);
          }
        }),
      );
      t.assert(limited, `no 429 after ${sent} requests in ${Math.round((Date.now() - started) / 1000)} s`);
      const body = limited.json as { error?: unknown } | undefined;
      t.assert(body && typeof body.error === 'string', `the 429 body is not {error: string}: ${limited.text.slice(0, 200)}`);
      const otherRes = await fetchTool(t, 'not a url', other.key);
      t.assert(otherRes.status !== 429, `another key was limited too: ${show(otherRes)}`);
      t.equal(otherRes.status, 400, 'another key, the same invalid request');
      t.note(`429 after ${sent} requests; Retry-After ${limited.headers.get('retry-after') ?? 'absent'}`);
    }),
  ];
});
