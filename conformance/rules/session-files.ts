// SF1-SF3, files in and out of a session (the contract names neither; the vendor's paths
// and shapes, as openapi.yaml documents them):
//  SF1 a file a page downloads is listed by GET .../downloads, once finished, in the
//      documented shape; its file_link answers the bytes as an attachment, also after the
//      session ended, and one byte range of it as 206 with Content-Range (resuming);
//      DELETE .../downloads/{id} removes it.
//  SF2 POST .../uploads answers where the file is, and a page's file input given that path
//      over CDP (DOM.setFileInputFiles, read by the browser from its own disk) reads the bytes.
//  SF3 files of a session the project does not have (unknown, another project's) answer 404
//      both ways; an upload to a session that has ended is refused (404 or 409), never kept.
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser } from 'playwright-core';
import type { Exchange, SuiteContext } from '../context.js';
import { describe as line, type HttpResponse } from '../http.js';
import { buildRequest } from '../requests.js';
import { bodyVerdict } from '../responses.js';
import { check, defineRules, type T } from '../runner.js';

const HEADLESS = { browser: { headless: { active: true } }, session: { timeout: { idle_timeout: 2, max_duration: 5 } } };
/** The attachment SF1's page downloads, served by the suite's fixture server. */
const CSV = 'id,name\n1,conformance\n2,downloads\n';
const LISTED_MS = 30_000;

const show = (ex: Exchange) => (ex.response ? line(ex.request, ex.response, 300) : `${ex.request.method} ${ex.request.url}: ${ex.error}`);

function answer(t: T, ex: Exchange): HttpResponse {
  if (!ex.response) t.fail(`no answer: ${ex.error ?? 'unknown error'}`);
  return ex.response;
}

interface Item {
  id: string;
  file_link: string;
  suggested_file_name: string;
  size: number;
}

export default defineRules((ctx: SuiteContext) => {
  const op = (id: string) => ctx.contract.operation(id);
  const at = (id: string, pathParams: Record<string, string>) => buildRequest(ctx.contract, op(id), { pathParams });

  const newSession = async (t: T): Promise<{ id: string; cdp_url: string }> => {
    const ex = await ctx.call(await ctx.build(op('createSession')), { bodyValue: HEADLESS });
    const res = answer(t, ex);
    t.assert(res.status === 200, `POST /v1/sessions answered ${show(ex)}`);
    const data = (res.json as { data?: { id?: unknown; cdp_url?: unknown } } | undefined)?.data;
    t.assert(typeof data?.id === 'string' && typeof data.cdp_url === 'string', `POST /v1/sessions answered no data.id and cdp_url: ${show(ex)}`);
    return { id: data.id, cdp_url: data.cdp_url };
  };
  const endSession = (id: string) => ctx.call(at('endSession', { session_id: id }));
  const listDownloads = (id: string, key?: string) => ctx.call(at('listSessionDownloads', { session_id: id }), key ? { key: { value: key } } : {});
  const upload = (id: string, name: string, text: string, key?: string) =>
    ctx.call(at('uploadSessionFile', { sessionId: id }), {
      bodyValue: { file: { file: true, filename: name, type: 'text/plain', bytes: new TextEncoder().encode(text) } },
      ...(key ? { key: { value: key } } : {}),
    });
  const items = (ex: Exchange) => (ex.response?.json as { data?: { items?: Item[] } } | undefined)?.data?.items;
  /** GET a file_link with the run's key. */
  const fetchLink = async (link: string, headers: Record<string, string> = {}) => {
    const res = await fetch(link, { headers: { 'service-api-key': ctx.mainKey ?? '', ...headers }, signal: AbortSignal.timeout(30_000) });
    return { status: res.status, disposition: res.headers.get('content-disposition'), range: res.headers.get('content-range'), text: await res.text() };
  };

  return [
    check(
      'SF1 a downloaded file is listed once finished, fetched by its file_link (whole, a byte range, after the session ended), and deleted',
      async (t: T) => {
        const path = '/conformance/session-files/report.csv';
        ctx.fixtures.route('GET', path, (_req, res) => {
          res.writeHead(200, { 'content-type': 'text/csv', 'content-disposition': 'attachment; filename="conformance-report.csv"' });
          res.end(CSV);
        });
        const s = await newSession(t);
        let ended = false;
        try {
          // The API's own navigation: it ends in the download rather than a page, which each
          // server may answer as it documents; the file is what this rule is about.
          await ctx.call(at('gotoUrl', { sessionId: s.id }), { bodyValue: { url: await ctx.fixtures.url(path) } });
          let listed = await listDownloads(s.id);
          for (const deadline = Date.now() + LISTED_MS; (items(listed)?.length ?? 0) === 0 && Date.now() < deadline; ) {
            await sleep(500);
            listed = await listDownloads(s.id);
          }
          const res = answer(t, listed);
          t.assert(res.status === 200, `GET .../downloads answered ${show(listed)}`);
          const verdict = bodyVerdict(ctx.contract, op('listSessionDownloads'), res);
          t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? `${verdict.message}\n${show(listed)}` : '');
          const mine = items(listed)?.find((i) => i.suggested_file_name === 'conformance-report.csv');
          t.assert(mine, `the downloaded file is not listed within ${LISTED_MS / 1000} s: ${show(listed)}`);
          t.equal(mine.size, CSV.length, 'its size');

          const live = await fetchLink(mine.file_link);
          t.equal(live.status, 200, `GET ${mine.file_link} while the session runs`);
          t.equal(live.text, CSV, 'the bytes the page downloaded');
          t.assert(
            /^attachment; filename="conformance-report\.csv"/.test(live.disposition ?? ''),
            `Content-Disposition is ${JSON.stringify(live.disposition)}`,
          );
          const part = await fetchLink(mine.file_link, { range: 'bytes=3-6' });
          t.equal(part.status, 206, `GET ${mine.file_link} with Range: bytes=3-6`);
          t.equal(part.range, `bytes 3-6/${CSV.length}`, 'its Content-Range');
          t.equal(part.text, CSV.slice(3, 7), 'the bytes of that range');

          const end = await endSession(s.id);
          ended = true;
          t.assert(end.response?.status === 200, `DELETE /v1/sessions/${s.id} answered ${show(end)}`);
          const after = await listDownloads(s.id);
          t.assert(
            items(after)?.some((i) => i.id === mine.id),
            `not listed after the session ended: ${show(after)}`,
          );
          t.equal((await fetchLink(mine.file_link)).text, CSV, 'the bytes after the session ended');

          const del = await ctx.call(at('deleteSessionDownload', { session_id: s.id, download_id: mine.id }));
          t.assert(del.response?.status === 200, `DELETE .../downloads/${mine.id} answered ${show(del)}`);
          t.equal((await fetchLink(mine.file_link)).status, 404, 'file_link after the deletion');
          const gone = await listDownloads(s.id);
          t.assert(!items(gone)?.some((i) => i.id === mine.id), `still listed after its deletion: ${show(gone)}`);
          t.note(`listed, fetched during and after the session, deleted (${mine.file_link})`);
        } finally {
          ctx.fixtures.unroute('GET', path);
          if (!ended) await endSession(s.id);
        }
      },
    ),

    check("SF2 an uploaded file's path, given to a page's file input over CDP, gives the page its bytes", async (t: T) => {
      const s = await newSession(t);
      const text = `uploaded by the conformance suite ${Date.now()}`;
      let browser: Browser | undefined;
      try {
        const up = await upload(s.id, 'conformance-upload.txt', text);
        const res = answer(t, up);
        t.assert(res.status === 200, `POST .../uploads answered ${show(up)}`);
        const verdict = bodyVerdict(ctx.contract, op('uploadSessionFile'), res);
        t.assert(verdict.kind !== 'fail', verdict.kind === 'fail' ? `${verdict.message}\n${show(up)}` : '');
        const path = (res.json as { data: { path: string } }).data.path;

        browser = await chromium.connectOverCDP(s.cdp_url, { timeout: 30_000 });
        const context = browser.contexts()[0] ?? (await browser.newContext());
        const page = await context.newPage();
        await page.goto(await ctx.fixtures.url('/site/files/upload.html'));
        const cdp = await context.newCDPSession(page);
        const { root } = await cdp.send('DOM.getDocument');
        const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector: '#file' });
        await cdp.send('DOM.setFileInputFiles', { nodeId, files: [path] });
        const read = await page
          .waitForFunction(() => (window as unknown as { uploaded?: unknown }).uploaded, undefined, { timeout: 15_000 })
          .then((h) => h.jsonValue());
        t.equal(read, [{ name: 'conformance-upload.txt', size: text.length, text }], 'what the page read from its file input');
        t.note(`the page read ${text.length} bytes from ${path}`);
      } finally {
        await browser?.close().catch(() => {});
        await endSession(s.id);
      }
    }),

    check("SF3 files of an unknown or another project's session answer 404; an upload to an ended session is refused", async (t: T) => {
      const s = await newSession(t);
      const unknown = '00000000-0000-4000-8000-00000000f11e';
      for (const [what, ex] of [
        ['downloads of an unknown session', await listDownloads(unknown)],
        ['an upload to an unknown session', await upload(unknown, 'x.txt', 'x')],
      ] as const) {
        t.equal(answer(t, ex).status, 404, `${what}: ${show(ex)}`);
      }
      const other = await ctx.otherKey();
      if (other.key) {
        for (const [what, ex] of [
          ["another project's session's downloads", await listDownloads(s.id, other.key)],
          ["an upload to another project's session", await upload(s.id, 'x.txt', 'x', other.key)],
        ] as const) {
          t.equal(answer(t, ex).status, 404, `${what}: ${show(ex)}`);
        }
      } else {
        t.note(`another project: not checked (${other.reason})`);
      }
      await endSession(s.id);
      const late = await upload(s.id, 'late.txt', 'x');
      const status = answer(t, late).status;
      t.assert(status === 404 || status === 409, `an upload to an ended session answered ${show(late)}, not 404 or 409`);
      t.note(`ended session: ${status}`);
    }),
  ];
});
