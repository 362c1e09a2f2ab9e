// The hosted vendor's own TypeScript SDK (npm anchorbrowser), unchanged, against this server:
// a user switches by giving the SDK our base URL, nothing else
// (docs/coming-from-the-hosted-service.md): the SDK sends its key in its own header,
// anchor-api-key, which the server reads beside service-api-key. Every SDK method the docs
// claim is driven here against the real server and real Chromium; the list grows as the
// families land.
import Anchorbrowser, { toFile } from 'anchorbrowser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPageServer, type PageServer } from '../sessions/test-support.js';
import { smallFile } from '../../conformance/requests.js';
import { startTestServer, type TestServer } from './harness.js';

const HEADLESS = { browser: { headless: { active: true } }, session: { recording: { active: false } } };

describe('the vendor SDK, unchanged, with our base URL', () => {
  let server: TestServer;
  let pages: PageServer;
  let client: Anchorbrowser;

  beforeAll(async () => {
    server = await startTestServer();
    pages = await startPageServer();
    // Only the key and the base URL, as the vendor's own examples construct it.
    client = new Anchorbrowser({ apiKey: server.apiKey, baseURL: server.url, maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  it('sends its key in anchor-api-key alone, which is read; a wrong one answers 401', async () => {
    const sent: Headers[] = [];
    const watched = new Anchorbrowser({
      apiKey: server.apiKey,
      baseURL: server.url,
      maxRetries: 0,
      fetch: (input: string | URL | Request, init?: RequestInit) => (sent.push(new Headers(init?.headers)), fetch(input, init)),
    });
    expect(await watched.sessions.all.status()).toMatchObject({ data: { items: expect.any(Array) } });
    expect(sent.map((h) => [h.get('anchor-api-key'), h.get('service-api-key')])).toEqual([[server.apiKey, null]]);

    const wrong = new Anchorbrowser({ apiKey: 'sk_wrong_vendor_key', baseURL: server.url, maxRetries: 0 });
    const refused = await wrong.sessions.all.status().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(Anchorbrowser.AuthenticationError);
    expect(refused).toMatchObject({ status: 401, error: { error: { code: 401, message: 'Invalid API key (read from the anchor-api-key header)' } } });
  });

  it('sessions: create, retrieve, all.status, goto, input, clipboard, screenshot, recordings, delete, all.delete', async () => {
    const created = await client.sessions.create(HEADLESS);
    const id = created.data!.id!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.data!.cdp_url).toContain(`/v1/cdp/${id}?token=`);

    const record = await client.sessions.retrieve(id);
    expect(record).toMatchObject({ data: { id, status: 'running' } });

    const statuses = await client.sessions.all.status();
    expect(statuses.data?.items?.map((i) => i.session_id)).toContain(id);

    expect(await client.sessions.goto(id, { url: pages.url('/') })).toBeTruthy();
    await client.sessions.mouse.click(id, { x: 10, y: 10 });
    await client.sessions.keyboard.type(id, { text: 'hello' });
    await client.sessions.scroll(id, { x: 10, y: 10, deltaY: 100 });
    await client.sessions.clipboard.set(id, { text: 'copied' });
    expect(await client.sessions.clipboard.get(id)).toMatchObject({ data: { text: 'copied' } });
    const shot = await client.sessions.retrieveScreenshot(id);
    expect(shot.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await shot.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
    expect(await client.sessions.recordings.list(id)).toEqual({ data: { count: 0, items: [] } });

    expect(await client.sessions.delete(id)).toEqual({ data: { status: 'completed' } });
    await expect(client.sessions.retrieve(id)).rejects.toMatchObject({ status: 404 });

    const a = await client.sessions.create(HEADLESS);
    const b = await client.sessions.create(HEADLESS);
    expect(await client.sessions.all.delete()).toEqual({ data: { status: 'completed', ended: 2 } });
    for (const s of [a, b]) await expect(client.sessions.retrieve(s.data!.id!)).rejects.toMatchObject({ status: 404 });
  });

  it("browser.connect and browser.create: Playwright over the SDK's own CDP address (API key and session on the base URL)", async () => {
    const created = await client.sessions.create(HEADLESS);
    const id = created.data!.id!;
    const browser = await client.browser.connect(id);
    try {
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      await page.goto(pages.url('/'));
      expect(await page.title()).toBe('Home');
    } finally {
      await browser.close();
    }

    const made = await client.browser.create({ sessionOptions: HEADLESS });
    try {
      const page = await made.contexts()[0]!.newPage();
      await page.goto(pages.url('/second'));
      expect(await page.title()).toBe('Second');
    } finally {
      await made.close();
    }

    // A wrong key opens nothing.
    const wrong = new Anchorbrowser({ apiKey: 'sk_wrong', baseURL: server.url, maxRetries: 0 });
    const other = await client.sessions.create(HEADLESS);
    await expect(wrong.browser.connect(other.data!.id!)).rejects.toThrow(/401/);
    await client.sessions.all.delete();
  });

  it('tools.fetchWebpage: a page as Markdown, sessionless or from a running session', async () => {
    expect(await client.tools.fetchWebpage({ url: pages.url('/'), format: 'markdown' })).toContain('# Hello from the test server');
    const created = await client.sessions.create(HEADLESS);
    const id = created.data!.id!;
    expect(await client.tools.fetchWebpage({ sessionId: id, url: pages.url('/second'), format: 'html' })).toContain('<title>Second</title>');
    expect(await client.tools.fetchWebpage({ sessionId: id })).toContain('second page');
    await client.sessions.delete(id);
  });

  it('extensions.list answers the uploaded extensions', async () => {
    expect(await client.extensions.list()).toEqual({ data: [] });
    const form = new FormData();
    form.set('name', 'conformance');
    form.set('file', new Blob([new Uint8Array(smallFile('application/zip').bytes)], { type: 'application/zip' }), 'extension.zip');
    const uploaded = await (await server.request('/v1/extensions', { method: 'POST', body: form })).json();
    expect(await client.extensions.list()).toEqual({ data: [uploaded.data] });
    await server.request(`/v1/extensions/${uploaded.data.id}`, { method: 'DELETE' });
  });

  it('profiles: create from a running session, retrieve, list, delete; a session with it', async () => {
    const source = await client.sessions.create(HEADLESS);
    const id = source.data!.id!;
    expect(await client.profiles.create({ name: 'sdk-profile', source: 'session', session_id: id, description: 'from the SDK' })).toEqual({
      data: { status: 'pending' },
    });
    await client.sessions.delete(id);
    let profile = await client.profiles.retrieve('sdk-profile');
    for (let i = 0; profile.data?.status === 'pending' && i < 300; i++) {
      await new Promise((r) => setTimeout(r, 100));
      profile = await client.profiles.retrieve('sdk-profile');
    }
    expect(profile.data).toMatchObject({ name: 'sdk-profile', description: 'from the SDK', status: 'ready', source: 'session', session_id: id });
    expect(await client.profiles.list()).toMatchObject({ data: { count: 1, items: [{ name: 'sdk-profile', status: 'ready' }] } });
    const withProfile = await client.sessions.create({ ...HEADLESS, browser: { ...HEADLESS.browser, profile: { name: 'sdk-profile' } } });
    await client.sessions.delete(withProfile.data!.id!);
    expect(await client.profiles.delete('sdk-profile')).toEqual({ data: { status: 'deleted' } });
    await expect(client.profiles.retrieve('sdk-profile')).rejects.toMatchObject({ status: 404 });
  });

  it('sessions.uploadFile puts a file in the browser; sessions.retrieveDownloads lists what a page downloaded', async () => {
    // Without the PDF viewer (an option the SDK's types do not have) a PDF is a download.
    const created = await server.request('/v1/sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...HEADLESS, browser: { ...HEADLESS.browser, pdf_viewer: { active: false } } }),
    });
    const id = ((await created.json()) as { data: { id: string } }).data.id;
    const up = await client.sessions.uploadFile(id, { file: await toFile(Buffer.from('from the SDK'), 'sdk.txt') });
    expect(up.data).toMatchObject({ status: 'uploaded', message: expect.stringMatching(/\/uploads\/sdk\.txt$/) });
    // The navigation itself ends in the download, without a page.
    await client.sessions.goto(id, { url: pages.url('/doc.pdf') }).catch(() => {});
    let listed = await client.sessions.retrieveDownloads(id);
    for (let i = 0; i < 100 && listed.data?.count === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      listed = await client.sessions.retrieveDownloads(id);
    }
    expect(listed.data?.items?.map((d) => [d.suggested_file_name, d.original_download_url])).toEqual([['doc.pdf', pages.url('/doc.pdf')]]);
    await client.sessions.delete(id);
  });

  it('tools.screenshotWebpage answers a PNG', async () => {
    const res = await client.tools.screenshotWebpage({ url: pages.url('/') });
    expect(res.headers.get('content-type')).toBe('image/png');
    expect(
      Buffer.from(await res.arrayBuffer())
        .subarray(1, 4)
        .toString(),
    ).toBe('PNG');
  });
});
