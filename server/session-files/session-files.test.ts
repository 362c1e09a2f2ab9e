// Files in and out of a session, end to end over real HTTP and real Chromium: what pages
// download is kept (Playwright over cdp_url clicking links, a plain navigation to an
// attachment, a file a script makes, the API's goto and initial_url with no CDP client), a
// partial file is never listed, the files outlive the session and its browser root, the
// per-session limit cancels what would pass it, and a download is deleted; files uploaded to a
// running session reach the page's file input through Playwright's setInputFiles, its file
// chooser, CDP's DOM.setFileInputFiles and Puppeteer's uploadFile (the browser reading its
// own disk), with safe names, limits and the 404/409 answers.
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import puppeteer, { type ElementHandle } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, createSession, endSession, eventually, getSession, headless, HEADLESS, rootOf, roots } from '../sessions/test-support.js';
import { fixtureBinary, fixtureText, startFixtureServer, type FixtureServer } from '../../fixtures/server.js';

const DOWNLOADS_LIMIT = 300_000;
const UPLOADS_LIMIT = 100_000;
const GENERATED_CSV = 'name,value\nmade,by the page\n';

interface Item {
  id: string;
  file_link: string;
  original_download_url?: string;
  origin_url?: string;
  suggested_file_name: string;
  original_file_name: string;
  duration: number;
  size: number;
  created_at: string;
}

describe.each(browserBackends)('session files on %s', (backend) => {
  let server: TestServer;
  let site: FixtureServer;

  beforeAll(async () => {
    server = await startTestServer({
      backend,
      env: { SESSION_DOWNLOADS_MAX_BYTES: String(DOWNLOADS_LIMIT), SESSION_UPLOADS_MAX_BYTES: String(UPLOADS_LIMIT), MAX_UPLOAD_BYTES: '70000' },
    });
    site = await startFixtureServer();
  });
  afterAll(async () => {
    await server?.close();
    await site?.close();
  });

  const browsersDir = () => browsersDirFor(server.config.dataDir);
  const list = async (id: string, key?: string) => {
    const res = await server.request(`/v1/sessions/${id}/downloads`, key ? { headers: { 'service-api-key': key } } : {});
    return { status: res.status, body: (await res.json()) as { data: { count: number; items: Item[] }; error?: { message: string } } };
  };
  const names = async (id: string) => (await list(id)).body.data.items.map((i) => i.suggested_file_name);
  const upload = async (id: string, name: string, content: string | Buffer, key?: string) => {
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(Buffer.from(content))]), name);
    const res = await server.request(`/v1/sessions/${id}/uploads`, { method: 'POST', body: form, ...(key ? { headers: { 'service-api-key': key } } : {}) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const firstPage = async (browser: Browser): Promise<Page> => browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());

  it('keeps what a page downloads for Playwright over cdp_url, never a partial file, after the session and its root are gone, until deleted', async () => {
    const s = await createSession(server, HEADLESS);
    const root = rootOf(browsersDir(), s.id);
    const page0 = site.url + '/site/files/downloads.html';
    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      const page = await firstPage(browser);
      await page.goto(page0);
      // Playwright sets its own download folder (a temporary one on its machine); the files
      // must land in the session's root anyway, or the server keeps none of them.
      const seen: (string | null)[] = [];
      for (const button of ['#attribute', '#attachment', '#generated']) {
        const [download] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
        seen.push(download.suggestedFilename(), await download.failure());
      }
      expect(seen).toEqual(['notes-copy.txt', null, 'data-archive.bin', null, 'generated.csv', null]);
      // A plain navigation to an attachment (Playwright reports the download instead of a page).
      await expect(page.goto(site.url + '/files/archive.bin')).rejects.toThrow(/Download is starting/);
      await eventually(async () => (await list(s.id)).body.data.count === 4, 15_000, 'four kept downloads');

      // A download in progress: its partial file is in the root, and it is not listed.
      await page.goto(page0);
      await page.click('#slow');
      await eventually(() => readdirSync(join(root.dir, 'downloads')).some((n) => n.endsWith('.crdownload')), 10_000, 'a partial file');
      expect(await names(s.id)).not.toContain('sized.bin');
      await eventually(async () => (await names(s.id)).includes('sized.bin'), 15_000, 'the slow download, once finished');
    } finally {
      await browser.close();
    }

    const { body } = await list(s.id);
    expect(body.data.count).toBe(5);
    const items = body.data.items;
    expect(items.map((i) => [i.suggested_file_name, i.original_file_name, i.size])).toEqual([
      ['notes-copy.txt', 'notes-copy.txt', Buffer.byteLength(fixtureText)],
      ['data-archive.bin', 'data-archive.bin', fixtureBinary.length],
      ['generated.csv', 'generated.csv', Buffer.byteLength(GENERATED_CSV)],
      ['data-archive (1).bin', 'data-archive.bin', fixtureBinary.length],
      ['sized.bin', 'sized.bin', 200_000],
    ]);
    expect(items[0]).toMatchObject({ original_download_url: site.url + '/text/notes.txt', origin_url: page0 });
    expect(items[1]).toMatchObject({ original_download_url: site.url + '/files/archive.bin', origin_url: page0 });
    expect(items[2]!.original_download_url).toMatch(/^blob:http:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]{36}$/);
    expect(items[3]!.original_download_url).toBe(site.url + '/files/archive.bin');
    expect(items[4]!.duration).toBeGreaterThanOrEqual(3_000); // its second half came four seconds later
    for (const i of items) {
      expect(i.file_link).toBe(`${server.config.publicUrl}/v1/sessions/${s.id}/downloads/${i.id}`);
      expect(new Date(i.created_at).getTime()).toBeGreaterThan(Date.now() - 120_000);
    }
    // Moved out of the browser's root as they finished.
    expect(readdirSync(join(root.dir, 'downloads'))).toEqual([]);

    expect((await endSession(server, s.id)).status).toBe(200);
    expect(existsSync(root.dir)).toBe(false);
    expect(roots(browsersDir())).toEqual([]);

    // After the end: still listed, each file's bytes as the page had them.
    expect((await list(s.id)).body).toEqual(body);
    const link = (n: number) => `/v1/sessions/${s.id}/downloads/${items[n]!.id}`;
    const fetched = async (n: number) => {
      const res = await server.request(link(n));
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        disposition: res.headers.get('content-disposition'),
        bytes: Buffer.from(await res.arrayBuffer()),
      };
    };
    expect(await fetched(0)).toEqual({
      status: 200,
      type: 'text/plain; charset=utf-8',
      disposition: 'attachment; filename="notes-copy.txt"',
      bytes: Buffer.from(fixtureText),
    });
    expect(await fetched(1)).toMatchObject({ status: 200, type: 'application/octet-stream', bytes: fixtureBinary });
    expect(await fetched(2)).toMatchObject({ status: 200, type: 'text/csv; charset=utf-8', bytes: Buffer.from(GENERATED_CSV) });
    expect((await fetched(3)).disposition).toBe('attachment; filename="data-archive (1).bin"');
    expect((await fetched(4)).bytes).toEqual(Buffer.concat([Buffer.alloc(100_000, 0x61), Buffer.alloc(100_000, 0x62)]));
    // Resumed with a byte range: 206 with that part; outside the file 416; not a single range, the whole file.
    const ranged = async (range: string) => {
      const res = await server.request(link(4), { headers: { range } });
      return {
        status: res.status,
        range: res.headers.get('content-range'),
        length: res.headers.get('content-length'),
        disposition: res.headers.get('content-disposition'),
        bytes: Buffer.from(await res.arrayBuffer()),
      };
    };
    expect(await ranged('bytes=99998-100001')).toEqual({
      status: 206,
      range: 'bytes 99998-100001/200000',
      length: '4',
      disposition: 'attachment; filename="sized.bin"',
      bytes: Buffer.from('aabb'),
    });
    expect(await ranged('bytes=-3')).toMatchObject({ status: 206, range: 'bytes 199997-199999/200000', bytes: Buffer.from('bbb') });
    expect(await ranged('bytes=200000-')).toMatchObject({ status: 416, range: 'bytes */200000' });
    expect(await ranged('bytes=0-1,5-6')).toMatchObject({ status: 200, range: null, length: '200000' });

    // Deleted: not listed, not fetched, its stored file gone; a second DELETE is 404.
    const stored = () => readdirSync(join(server.dataDir, 'downloads'), { recursive: true }).filter((p) => String(p).endsWith(items[1]!.id));
    expect(stored()).toHaveLength(1);
    const del = await server.request(link(1), { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ data: { status: 'deleted' } });
    expect(await names(s.id)).toEqual(['notes-copy.txt', 'generated.csv', 'data-archive (1).bin', 'sized.bin']);
    expect((await fetched(1)).status).toBe(404);
    expect((await server.request(link(1), { method: 'DELETE' })).status).toBe(404);
    expect(stored()).toEqual([]);
  });

  it('keeps downloads with no CDP client: the API goto, and one that initial_url began while the session started', async () => {
    const s = await createSession(server, headless({ initial_url: site.url + '/files/archive.bin' }));
    // The navigation itself ends in the download, not a page (its answer is the input
    // capability's business); the file is what counts here.
    await server.request(`/v1/sessions/${s.id}/goto`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: site.url + '/files/sized.bin?bytes=1000' }),
    });
    await eventually(async () => (await names(s.id)).includes('sized.bin'), 15_000, 'the download the goto began');
    // The early one finished unseen (no events were asked for yet): found on disk when the
    // session started if it had finished by then (kept at once), else, once it has its final
    // name in the root, by the end. (Ended sooner, it would be partial, and not kept.)
    const root = rootOf(browsersDir(), s.id);
    await eventually(
      async () => readdirSync(join(root.dir, 'downloads')).includes('data-archive.bin') || (await names(s.id)).includes('data-archive.bin'),
      15_000,
      'the early download to finish',
    );
    await endSession(server, s.id);
    const items = (await list(s.id)).body.data.items;
    expect(items.map((i) => [i.suggested_file_name, i.size]).sort()).toEqual([
      ['data-archive.bin', fixtureBinary.length],
      ['sized.bin', 1000],
    ]);
    // The one begun before the server listened for downloads was found on disk: no URL known.
    const early = items.find((i) => i.suggested_file_name === 'data-archive.bin')!;
    expect(early.original_download_url).toBeUndefined();
    expect(early.duration).toBe(0);
    expect(items.find((i) => i.suggested_file_name === 'sized.bin')!.original_download_url).toBe(site.url + '/files/sized.bin?bytes=1000');
  });

  it('keeps the downloads of a browser context a CDP client made (Playwright newContext)', async () => {
    const s = await createSession(server, HEADLESS);
    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(site.url + '/site/files/downloads.html');
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#attribute')]);
      expect(await download.failure()).toBeNull();
      await eventually(async () => (await names(s.id)).includes('notes-copy.txt'), 15_000, 'the download of the new context');
      await context.close();
    } finally {
      await browser.close();
    }
    await endSession(server, s.id);
    expect((await list(s.id)).body.data.items.map((i) => [i.suggested_file_name, i.origin_url])).toEqual([
      ['notes-copy.txt', site.url + '/site/files/downloads.html'],
    ]);
  });

  it("keeps the downloads of a Puppeteer client's own browser context that allows them (Chromium denies them in a context made over CDP otherwise)", async () => {
    const s = await createSession(server, HEADLESS);
    const pp = await puppeteer.connect({ browserWSEndpoint: s.cdp_url, defaultViewport: null });
    try {
      // The folder the client names is its own machine's: the session's downloads folder is used.
      const context = await pp.createBrowserContext({ downloadBehavior: { policy: 'allow', downloadPath: '/tmp/puppeteer-downloads' } });
      const page = await context.newPage();
      await page.goto(site.url + '/site/files/downloads.html');
      await page.click('#attribute');
      await eventually(async () => (await names(s.id)).includes('notes-copy.txt'), 15_000, 'the download of the Puppeteer context');
      expect(existsSync('/tmp/puppeteer-downloads')).toBe(false);
      await context.close();
    } finally {
      await pp.disconnect();
    }
    await endSession(server, s.id);
    expect((await list(s.id)).body.data.items.map((i) => [i.suggested_file_name, i.size])).toEqual([['notes-copy.txt', expect.any(Number)]]);
  });

  it(`keeps at most SESSION_DOWNLOADS_MAX_BYTES (${DOWNLOADS_LIMIT}) of one session: a download past it is cancelled and not kept`, async () => {
    const s = await createSession(server, HEADLESS);
    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      const page = await firstPage(browser);
      const get = async (query: string) => {
        const done = page.waitForEvent('download').then((d) => d.failure());
        await page.goto(`${site.url}/files/sized.bin?${query}`).catch(() => {});
        return done;
      };
      expect(await get('bytes=200000')).toBeNull();
      await eventually(async () => (await list(s.id)).body.data.count === 1, 15_000, 'the first download');
      // 200,000 more would make 400,000: cancelled in the browser as soon as its size is known
      // (here long before its end)...
      expect(await get('bytes=200000&ms=3000')).toBe('canceled');
      // ...or, finished before the cancel could land, not kept.
      await get('bytes=200000');
      expect(await get('bytes=1000')).toBeNull();
      await eventually(async () => (await list(s.id)).body.data.count === 2, 15_000, 'the small download');
    } finally {
      await browser.close();
    }
    await endSession(server, s.id);
    expect((await list(s.id)).body.data.items.map((i) => [i.suggested_file_name, i.size])).toEqual([
      ['sized.bin', 200_000],
      ['sized (1).bin', 1_000],
    ]);
  });

  it('puts an uploaded file where the page gets it: Playwright setInputFiles, its file chooser, CDP DOM.setFileInputFiles, Puppeteer uploadFile', async () => {
    const s = await createSession(server, HEADLESS);
    const root = rootOf(browsersDir(), s.id);
    const text = 'hello from an agent with no disk of its own ✓';
    const up = await upload(s.id, 'greeting.txt', text);
    expect(up).toEqual({
      status: 200,
      body: {
        data: {
          status: 'uploaded',
          message: `File uploaded to ${join(root.dir, 'uploads', 'greeting.txt')}`,
          path: join(root.dir, 'uploads', 'greeting.txt'),
          name: 'greeting.txt',
          size: Buffer.byteLength(text),
        },
      },
    });
    const path = up.body.data.path as string;
    expect(readFileSync(path, 'utf8')).toBe(text);
    const expected = [{ name: 'greeting.txt', size: Buffer.byteLength(text), text }];

    const browser = await chromium.connectOverCDP(s.cdp_url);
    try {
      const page = await firstPage(browser);
      const readBack = () => page.waitForFunction(() => (window as any).uploaded, undefined, { timeout: 10_000 }).then((h) => h.jsonValue());
      const fresh = () => page.goto(site.url + '/site/files/upload.html');

      await fresh();
      await page.setInputFiles('#file', path);
      expect(await readBack()).toEqual(expected);

      await fresh();
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.click('#file')]);
      await chooser.setFiles(path);
      expect(await readBack()).toEqual(expected);

      // What a client on another machine sends: the path alone, read by the browser.
      await fresh();
      const cdp = await page.context().newCDPSession(page);
      const { root: doc } = await cdp.send('DOM.getDocument');
      const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: doc.nodeId, selector: '#file' });
      await cdp.send('DOM.setFileInputFiles', { nodeId, files: [path] });
      expect(await readBack()).toEqual(expected);
      await cdp.detach();
    } finally {
      await browser.close();
    }

    // Puppeteer sends the path as it is.
    const pp = await puppeteer.connect({ browserWSEndpoint: s.cdp_url, defaultViewport: null });
    try {
      const page = await pp.newPage();
      await page.goto(site.url + '/site/files/upload.html');
      const input = (await page.$('#file')) as ElementHandle<HTMLInputElement>;
      await input.uploadFile(path);
      expect(await (await page.waitForFunction(() => (window as any).uploaded, { timeout: 10_000 })).jsonValue()).toEqual(expected);
    } finally {
      await pp.disconnect();
    }
    await endSession(server, s.id);
    expect(existsSync(path)).toBe(false);
  });

  it('makes upload names safe, replaces a file of the same name, holds to the limits, and answers 404 and 409', async () => {
    const s = await createSession(server, HEADLESS);
    const uploads = join(rootOf(browsersDir(), s.id).dir, 'uploads');
    for (const [given, safe] of [
      ['../../../etc/passwd', 'passwd'],
      ['..', 'upload'],
      ['C:\\Users\\me\\cv.pdf', 'cv.pdf'],
      ['.bashrc', 'bashrc'],
      ['bell\u0007.txt', 'bell.txt'],
      [`${'é'.repeat(150)}.txt`, `${'é'.repeat(98)}.txt`],
    ]) {
      const r = await upload(s.id, given!, 'x');
      expect(r.status, given).toBe(200);
      expect(r.body.data.name, given).toBe(safe);
      expect(r.body.data.path).toBe(join(uploads, safe!));
    }
    expect(readdirSync(uploads).sort()).toEqual(['bashrc', 'bell.txt', 'cv.pdf', 'passwd', 'upload', `${'é'.repeat(98)}.txt`].sort());

    // Same name: replaced.
    await upload(s.id, 'a.txt', 'first');
    await upload(s.id, 'a.txt', 'second');
    expect(readFileSync(join(uploads, 'a.txt'), 'utf8')).toBe('second');

    // One request past MAX_UPLOAD_BYTES, and the session past SESSION_UPLOADS_MAX_BYTES: 413.
    expect((await upload(s.id, 'big.bin', Buffer.alloc(80_000))).status).toBe(413);
    expect((await upload(s.id, 'one.bin', Buffer.alloc(60_000))).status).toBe(200);
    const over = await upload(s.id, 'two.bin', Buffer.alloc(50_000));
    expect(over.status).toBe(413);
    expect(over.body.error.message).toMatch(new RegExp(`The session's uploads would exceed ${UPLOADS_LIMIT} bytes`));
    // Replacing frees what it replaces.
    expect((await upload(s.id, 'one.bin', Buffer.alloc(60_000))).status).toBe(200);
    expect(existsSync(join(uploads, 'two.bin'))).toBe(false);

    // Another project's session, and a session that does not exist: 404, for files both ways.
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    expect((await upload(s.id, 'x.txt', 'x', other.key)).status).toBe(404);
    expect((await list(s.id, other.key)).status).toBe(404);
    expect((await upload(randomUUID(), 'x.txt', 'x')).status).toBe(404);
    expect((await list(randomUUID())).status).toBe(404);
    expect((await server.request(`/v1/sessions/${s.id}/downloads/${randomUUID()}`)).status).toBe(404);

    // Ended (here by its own client, Puppeteer's browser.close(): a session ended through DELETE
    // is not found at all): 409, and its uploads went with its browser.
    const pp = await puppeteer.connect({ browserWSEndpoint: s.cdp_url });
    await pp.close();
    await eventually(async () => (await getSession(server, s.id)).body.data.status !== 'running', 10_000, 'the session to end');
    const ended = await upload(s.id, 'late.txt', 'x');
    expect(ended.status).toBe(409);
    expect(ended.body.error.message).toBe('Session is not running');
    // The end is recorded while the browser's root is removed.
    await eventually(() => !existsSync(uploads), 10_000, 'the uploads to go with the root');
    expect((await list(s.id)).body).toEqual({ data: { count: 0, items: [] } });
    await endSession(server, s.id);
    expect((await upload(s.id, 'later.txt', 'x')).status).toBe(404);
  });
});
