// Extensions end to end over real HTTP and real Chromium: upload (and every refusal of a
// bad archive), list, get, delete, project scoping, and sessions (headless and headful)
// running the fixture extensions: a content script that marks every page, and a service
// worker that answers the content script's message, seen through Playwright over cdp_url.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zipOf } from '../testing/zip-of.js';
import { createProject } from '../auth/api-keys.js';
import { browserBackends, startTestServer, type TestServer } from '../testing/harness.js';
import { browsersDirFor, createSession, endSession, postSession, roots, startPageServer, type PageServer } from '../sessions/test-support.js';

const fixtures = fileURLToPath(new URL('../../fixtures/extensions/', import.meta.url));

/** A fixture extension's files, at the root of the ZIP or in one top folder. */
function fixture(name: string, folder = ''): Record<string, Buffer> {
  const dir = join(fixtures, name);
  return Object.fromEntries(readdirSync(dir).map((f) => [`${folder}${f}`, readFileSync(join(dir, f))]));
}

describe.each(browserBackends)('extensions on %s', (backend) => {
  let server: TestServer;
  let pages: PageServer;

  beforeAll(async () => {
    server = await startTestServer({ backend, env: { MAX_UPLOAD_BYTES: String(2 * 1024 * 1024) } });
    pages = await startPageServer();
  });
  afterAll(async () => {
    await server?.close();
    await pages?.close();
  });

  const upload = async (name: string, file: Buffer, key?: string) => {
    const form = new FormData();
    form.set('name', name);
    form.set('file', new Blob([new Uint8Array(file)], { type: 'application/zip' }), 'extension.zip');
    const res = await server.request('/v1/extensions', { method: 'POST', body: form, ...(key ? { headers: { 'service-api-key': key } } : {}) });
    return { status: res.status, body: await res.json() };
  };

  /**
   * Opens a page of the session and reads what the extensions left in its DOM: the marker's
   * is there from the document's start, the worker's answer when it comes (waited for only
   * where the responder runs).
   */
  const marks = async (cdpUrl: string, worker = true, newContext = false) => {
    const browser = await chromium.connectOverCDP(cdpUrl);
    try {
      // newContext: a browser context of the client's own (off the record), as Playwright's newContext makes.
      const page: Page = newContext
        ? await (await browser.newContext()).newPage()
        : (browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage()));
      await page.goto(pages.url('/second'));
      if (worker) await page.waitForFunction(() => document.documentElement.dataset.cbWorker !== undefined, undefined, { timeout: 15_000 }).catch(() => {});
      return await page.evaluate(() => ({ marker: document.documentElement.dataset.cbMarker, worker: document.documentElement.dataset.cbWorker }));
    } finally {
      await browser.close();
    }
  };

  it('uploads, lists, gets and deletes; sessions headless and headful run them; a deleted one stays with the session that has it', async () => {
    const marker = await upload('marker', await zipOf(fixture('marker')));
    expect(marker.status).toBe(200);
    expect(marker.body.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'marker',
      manifest: {
        name: 'Test marker',
        version: '1.0.0',
        manifest_version: 3,
        description: 'Marks every page it runs in (extension tests).',
        permissions: ['storage'],
      },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    // Zipped as a folder, as most tools do.
    const responder = await upload('responder', await zipOf(fixture('responder', 'responder/')));
    expect(responder.status).toBe(200);
    expect(responder.body.data.manifest).toEqual({ name: 'Test responder', version: '2.1', manifest_version: 3, description: '', permissions: [] });
    const ids = [marker.body.data.id, responder.body.data.id];

    const list = await (await server.request('/v1/extensions')).json();
    expect(list).toEqual({ data: [marker.body.data, responder.body.data] });
    const one = await server.request(`/v1/extensions/${ids[0]}`);
    expect(await one.json()).toEqual(marker.body.data);

    for (const headless of [true, false]) {
      const s = await createSession(server, { browser: { headless: { active: headless }, extensions: ids }, session: { recording: { active: false } } });
      try {
        expect(await marks(s.cdp_url), `headless ${headless}`).toEqual({ marker: 'marked by the extension', worker: 'worker got /second' });
        expect(await marks(s.cdp_url, true, true), `headless ${headless}, a new context`).toEqual({
          marker: 'marked by the extension',
          worker: 'worker got /second',
        });
      } finally {
        await endSession(server, s.id);
      }
    }

    // A session without them has neither.
    const plain = await createSession(server, { browser: { headless: { active: true } }, session: { recording: { active: false } } });
    expect(await marks(plain.cdp_url, false)).toEqual({ marker: undefined, worker: undefined });
    await endSession(server, plain.id);

    // Deleted while a session runs it: the session keeps its copy; new sessions are refused.
    const running = await createSession(server, { browser: { headless: { active: true }, extensions: [ids[0]] }, session: { recording: { active: false } } });
    const deleted = await server.request(`/v1/extensions/${ids[0]}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(await deleted.json()).toEqual({ data: { data: { status: 'deleted' } } });
    expect((await marks(running.cdp_url, false)).marker).toBe('marked by the extension');
    await endSession(server, running.id);
    expect((await server.request(`/v1/extensions/${ids[0]}`)).status).toBe(404);
    expect((await server.request(`/v1/extensions/${ids[0]}`, { method: 'DELETE' })).status).toBe(404);
    const refused = await postSession(server, { browser: { headless: { active: true }, extensions: [ids[0]] } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toBe(`Unknown extension: ${ids[0]}`);
    await server.request(`/v1/extensions/${ids[1]}`, { method: 'DELETE' });
    expect(await (await server.request('/v1/extensions')).json()).toEqual({ data: [] });
    expect(roots(browsersDirFor(server.config.dataDir))).toEqual([]);
  });

  it("keeps each project's extensions its own: another project's id is not found and starts no browser", async () => {
    const mine = await upload('marker', await zipOf(fixture('marker')));
    const other = await createProject(server.db, { name: 'other', source: 'bootstrap', key: `sk_test_other_${randomUUID().replaceAll('-', '')}` });
    const asOther = {
      request: (p: string, init: RequestInit = {}) =>
        fetch(server.url + p, { ...init, headers: { ...(init.headers as Record<string, string>), 'service-api-key': other.key } }),
    };
    expect((await asOther.request(`/v1/extensions/${mine.body.data.id}`)).status).toBe(404);
    expect((await asOther.request(`/v1/extensions/${mine.body.data.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(await (await asOther.request('/v1/extensions')).json()).toEqual({ data: [] });
    const res = await postSession(asOther, { browser: { headless: { active: true }, extensions: [mine.body.data.id] } });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(`Unknown extension: ${mine.body.data.id}`);
    expect(roots(browsersDirFor(server.config.dataDir))).toEqual([]);
    await server.request(`/v1/extensions/${mine.body.data.id}`, { method: 'DELETE' });
  });

  it('refuses a bad archive with a 400 that says what is wrong, before keeping anything', async () => {
    const manifest = (m: object) => JSON.stringify({ manifest_version: 3, name: 'x', version: '1.0', ...m });
    const refused = async (file: Buffer, message: RegExp) => {
      const r = await upload('bad', file);
      expect(r.status, String(message)).toBe(400);
      expect(r.body.error.message).toMatch(message);
    };
    await refused(Buffer.from('not a zip at all'), /not a ZIP archive/);
    await refused(await zipOf({ 'readme.txt': 'no manifest' }), /no manifest\.json/);
    await refused(await zipOf({ 'a/manifest.json': manifest({}), 'b/other.js': '' }), /no manifest\.json at its root or in its one top folder/);
    await refused(await zipOf({ 'manifest.json': '{ not json' }), /manifest\.json is not valid JSON/);
    await refused(await zipOf({ 'manifest.json': manifest({ manifest_version: 2 }) }), /Manifest V2/);
    await refused(await zipOf({ 'manifest.json': manifest({ manifest_version: 4 }) }), /manifest_version must be 3/);
    await refused(await zipOf({ 'manifest.json': manifest({ name: '' }) }), /name is missing/);
    await refused(await zipOf({ 'manifest.json': manifest({ version: 'one' }) }), /version must be/);
    // Path traversal: a name made the same length as a harmless one, then patched in place.
    const traversal = await zipOf({ 'manifest.json': manifest({}), 'zz/evil.js': 'x' });
    await refused(Buffer.from(traversal.toString('latin1').replaceAll('zz/evil.js', '../evil.js'), 'latin1'), /invalid relative path|ZIP archive is invalid/);
    // Too many entries.
    const many: Record<string, string> = { 'manifest.json': manifest({}) };
    for (let i = 0; i < 5_000; i++) many[`f/${i}.txt`] = '';
    await refused(await zipOf(many), /more than 5000 entries/);
    // A bomb: 101 MB of zeros deflate to about 100 KB.
    await refused(await zipOf({ 'manifest.json': manifest({}), 'zeros.bin': Buffer.alloc(101 * 1024 * 1024) }), /unpacks to more than 100 MB/);
    // A header that understates its entry: the entry inflates past it.
    const honest = await zipOf({ 'manifest.json': manifest({}), 'big.bin': Buffer.alloc(64 * 1024, 7) });
    await refused(understate(honest, 'big.bin', 1024), /ZIP archive is invalid/);
    // Past MAX_UPLOAD_BYTES (2 MB here): 413.
    const huge = await upload('huge', Buffer.alloc(3 * 1024 * 1024));
    expect(huge.status).toBe(413);
    expect(await (await server.request('/v1/extensions')).json()).toEqual({ data: [] });
    expect(readdirSync(join(server.config.dataDir, 'extensions'), { recursive: true }).filter((f) => String(f).endsWith('.zip'))).toEqual([]);
  });
});

/** Rewrites the uncompressed size of `name` in the ZIP's local and central headers. */
function understate(zip: Buffer, name: string, size: number): Buffer {
  const out = Buffer.from(zip);
  for (let i = 0; i < out.length - 4; i++) {
    const sig = out.readUInt32LE(i);
    // Local file header: size at 22, name length at 26, name at 30. Central: 24, 28, 46.
    const at = sig === 0x04034b50 ? { size: 22, len: 26, name: 30 } : sig === 0x02014b50 ? { size: 24, len: 28, name: 46 } : undefined;
    if (!at) continue;
    const len = out.readUInt16LE(i + at.len);
    if (out.toString('utf8', i + at.name, i + at.name + len) === name) out.writeUInt32LE(size, i + at.size);
  }
  return out;
}
