// The whole server on STORAGE_URL=s3://... (a local s3rver on loopback), over real HTTP and
// real Chromium: a recording made and downloaded (whole and ranged, through its signed
// link), a session's download, an extension uploaded and run by a session, a profile saved
// and loaded, a task artifact's link; each finished file in the bucket and none in
// DATA_DIR. Then a second server (a child process) on the same PostgreSQL schema and bucket
// serves the recording and download the first made and launches a session with the first
// one's extension and profile; and deleting the project empties the bucket.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zipOfDir } from '../testing/zip-of.js';
import { startFixtureServer, type FixtureServer } from '../../fixtures/server.js';
import { listDir } from '../browser/test-support.js';
import { startReceiver, type Receiver } from '../events/test-support.js';
import { createSession, endSession, eventually, startPageServer, type PageServer, type Requester } from '../sessions/test-support.js';
import { b64, call, deployedTask } from '../tasks/test-support.js';
import { startChildServer, type ChildServer } from '../testing/child-server.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { S3_MAX_SOCKETS, s3Client, type S3StorageConfig } from './s3.js';

const PREFIX = 'e2e';
// Shared by both servers, as every node of one database must share it.
const SECRETS_KEY = randomBytes(32).toString('hex');
const ADMIN_TOKEN = randomBytes(32).toString('hex');
const HEADLESS = { headless: { active: true } };
const NO_RECORDING = { recording: { active: false } };
const markerDir = fileURLToPath(new URL('../../fixtures/extensions/marker/', import.meta.url));

/** Files of a DATA_DIR's area folder, the file-system backend's place (a recording's `.work` frames aside): none on S3. */
function filesOfArea(dataDir: string, area: string): string[] {
  try {
    return readdirSync(join(dataDir, area)).filter((f) => !f.startsWith('.'));
  } catch {
    return [];
  }
}

describe('the server on S3 storage', () => {
  let s3: LocalS3;
  let server: TestServer;
  let pages: PageServer;
  let receiver: Receiver;
  let site: FixtureServer;
  const made: { sessionId?: string; recording?: { file_link: string; size: number }; download?: string; extensionId?: string } = {};

  /** Object keys in the bucket under the prefix, per area. */
  async function bucketKeys(area: string): Promise<string[]> {
    const client = s3Client(server.config.storage as S3StorageConfig);
    try {
      const out = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: `${PREFIX}/${area}/` }));
      return (out.Contents ?? []).map((o) => o.Key!.slice(`${PREFIX}/${area}/`.length));
    } finally {
      client.destroy();
    }
  }
  const localFiles = (area: string) => filesOfArea(server.dataDir, area);

  /** Reads what the marker extension and the signed-in fixture site left in a session's page. */
  async function inspect(cdpUrl: string) {
    const browser = await chromium.connectOverCDP(cdpUrl);
    try {
      const page = browser.contexts()[0]!.pages()[0] ?? (await browser.contexts()[0]!.newPage());
      await page.goto(pages.url('/account'));
      await page.waitForFunction(() => (window as any).state !== undefined, undefined, { timeout: 10_000 });
      return {
        marker: await page.evaluate(() => document.documentElement.dataset.cbMarker),
        user: await page.evaluate(() => (window as any).state.user as string | null),
        cart: await page.evaluate(() => (window as any).state.cart as string | null),
      };
    } finally {
      await browser.close();
    }
  }

  beforeAll(async () => {
    s3 = await startLocalS3();
    pages = await startPageServer();
    receiver = await startReceiver();
    site = await startFixtureServer();
    // On PostgreSQL when there is one, so that the second server can share its schema.
    server = await startTestServer({
      backend: process.env.DATABASE_URL ? 'postgres' : 'pglite',
      env: { ...s3.env(PREFIX), SECRETS_KEY, ADMIN_TOKEN, RECORDING_FPS: '5' },
    });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
    await pages?.close();
    await site?.close();
    await s3?.stop();
  });

  it(
    'stores a recording and a download in the bucket, and serves them whole and ranged (the recording through its signed link)',
    { timeout: 120_000 },
    async () => {
      const s = await createSession(server, { browser: HEADLESS, session: { initial_url: pages.url('/second') } });
      await server.request(`/v1/sessions/${s.id}/goto`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: `${site.url}/files/sized.bin?bytes=1000` }),
      });
      // Kept once its one PutObject is answered. This wait ran out under load (at 15 s, then at
      // 30 s) when that put met a kept-alive socket the bucket had just closed: the SDK does not
      // retry a streamed body, and the file waited for the session's end. S3BlobStorage.put
      // now sends it again.
      const download = (await eventually(
        async () => {
          const list = (await (await server.request(`/v1/sessions/${s.id}/downloads`)).json()) as any;
          return list.data.items[0] as { id: string; file_link: string; size: number } | undefined;
        },
        30_000,
        'the download',
      ))!;
      expect(await bucketKeys('downloads')).toEqual([expect.stringMatching(new RegExp(`/${s.id}/${download.id}$`))]);
      expect(localFiles('downloads')).toEqual([]);
      const file = await server.request(new URL(download.file_link).pathname);
      expect(file.status).toBe(200);
      expect(Buffer.from(await file.arrayBuffer()).equals(Buffer.concat([Buffer.alloc(500, 0x61), Buffer.alloc(500, 0x62)]))).toBe(true);
      const ranged = await server.request(new URL(download.file_link).pathname, { headers: { range: 'bytes=498-501' } });
      expect(ranged.status).toBe(206);
      expect(await ranged.text()).toBe('aabb');
      made.download = new URL(download.file_link).pathname;
      // Until the recording has kept a frame of the screencast: a recording of the session to store.
      const frames = join(server.dataDir, 'recordings', '.work', s.id);
      await eventually(() => listDir(frames).some((f) => f !== 'index.jsonl'), 10_000, 'a recorded frame');
      expect((await endSession(server, s.id)).status).toBe(200);
      const item = (await eventually(
        async () => {
          const list = (await (await server.request(`/v1/sessions/${s.id}/recordings`)).json()) as any;
          return list.data.items[0] as { id: string; file_link: string; size: number } | undefined;
        },
        90_000,
        'the recording',
      ))!;
      expect(await bucketKeys('recordings')).toEqual([expect.stringMatching(new RegExp(`/${s.id}/${item.id}\\.mp4$`))]);
      expect(localFiles('recordings')).toEqual([]);

      const whole = await fetch(item.file_link);
      expect(whole.status).toBe(200);
      const bytes = Buffer.from(await whole.arrayBuffer());
      expect(bytes.length).toBe(item.size);
      expect(bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');
      const part = await fetch(item.file_link, { headers: { range: 'bytes=4-11' } });
      expect(part.status).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes 4-11/${item.size}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(4, 12))).toBe(true);
      const tail = await server.request(`/v1/sessions/${s.id}/recordings/primary/fetch`, { headers: { range: 'bytes=-100' } });
      expect(tail.status).toBe(206);
      expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(bytes.length - 100))).toBe(true);

      // Reads that stop early (a player's HEAD, a viewer who leaves mid-file) give their
      // connection to the bucket back: more of them than the S3 client's sockets, then a read.
      const early = S3_MAX_SOCKETS / 2 + 5;
      for (let i = 0; i < early; i++) expect((await fetch(item.file_link, { method: 'HEAD' })).status).toBe(200);
      for (let i = 0; i < early; i++) {
        const abort = new AbortController();
        const res = await fetch(item.file_link, { signal: abort.signal });
        await res.body!.getReader().read();
        abort.abort();
      }
      const after = await fetch(item.file_link, { headers: { range: 'bytes=0-7' }, signal: AbortSignal.timeout(10_000) });
      expect(Buffer.from(await after.arrayBuffer()).equals(bytes.subarray(0, 8))).toBe(true);
      made.sessionId = s.id;
      made.recording = item;
    },
  );

  it('keeps an uploaded extension and a saved profile in the bucket, and a session launches with both', { timeout: 120_000 }, async () => {
    const form = new FormData();
    form.set('name', 'marker');
    form.set('file', new Blob([new Uint8Array(await zipOfDir(markerDir))], { type: 'application/zip' }), 'marker.zip');
    const uploaded = await server.request('/v1/extensions', { method: 'POST', body: form });
    expect(uploaded.status).toBe(200);
    const extensionId = ((await uploaded.json()) as any).data.id as string;
    expect(await bucketKeys('extensions')).toHaveLength(1);
    expect(localFiles('extensions')).toEqual([]);

    // Sign in to the fixture site in a session kept into the profile 'shop' at its end.
    const maker = await createSession(server, { browser: { ...HEADLESS, profile: { name: 'shop', persist: true } }, session: NO_RECORDING });
    const browser = await chromium.connectOverCDP(maker.cdp_url);
    const page = browser.contexts()[0]!.pages()[0]!;
    await page.goto(pages.url('/login'));
    await page.waitForFunction(() => (window as any).signedIn === true, undefined, { timeout: 10_000 });
    await browser.close();
    expect((await endSession(server, maker.id)).status).toBe(200);
    await eventually(
      async () => (((await call(server, 'GET', '/v1/profiles/shop')).body.data?.status as string) === 'ready' ? true : undefined),
      30_000,
      'the profile saved',
    );
    expect(await bucketKeys('profiles')).toHaveLength(1);
    expect(localFiles('profiles')).toEqual([]);

    const user = await createSession(server, { browser: { ...HEADLESS, extensions: [extensionId], profile: { name: 'shop' } }, session: NO_RECORDING });
    try {
      expect(await inspect(user.cdp_url)).toEqual({ marker: 'marked by the extension', user: 'test-buyer', cart: 'cart-42' });
    } finally {
      await endSession(server, user.id);
    }
    made.extensionId = extensionId;
  });

  it("serves a task artifact from the bucket through the event's signed link", { timeout: 120_000 }, async () => {
    const hook = await call(server, 'POST', '/v1/webhooks', { url: receiver.url, subscribed_events: ['task.completed', 'task.failed'] });
    expect(hook.status).toBe(200);
    const taskId = await deployedTask(
      server,
      `export default async function run(ctx: any) {
  await ctx.artifacts.save('note.txt', Buffer.from('kept in s3'), 'text/plain');
  return 1;
}
`,
      NO_RECORDING,
    );
    const run = await call(server, 'POST', `/v2/tasks/${taskId}/run`, { input_params: {}, sync: true });
    expect(run.body).toMatchObject({ status: 'success' });
    const event = await eventually(
      async () => receiver.received.map((r) => JSON.parse(r.body)).find((e) => e.data.run_id === run.body.run_id),
      30_000,
      'task.completed',
    );
    expect(event.type).toBe('task.completed');
    const [artifact] = event.data.artifacts as { name: string; url: string }[];
    expect(artifact!.name).toBe('note.txt');
    const download = await fetch(artifact!.url);
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('kept in s3');
    expect(await bucketKeys('task-artifacts')).toHaveLength(1);
    expect(localFiles('task-artifacts')).toEqual([]);
  });

  describe('a second server on the same database and bucket', () => {
    let second: ChildServer | undefined;
    let secondDir: string;
    const reason = 'DATABASE_URL is unset: two servers need one PostgreSQL (PGlite serves one process)';

    afterAll(async () => {
      if (second) {
        second.child.kill('SIGTERM');
        await second.exited;
      }
      if (secondDir) rmSync(secondDir, { recursive: true, force: true });
    });

    it('serves the recording and the download the first made, and launches a session with its extension and profile', { timeout: 120_000 }, async (ctx) => {
      if (!process.env.DATABASE_URL) {
        console.log(`skipped: ${reason}`);
        ctx.skip();
      }
      expect(made.recording && made.extensionId).toBeTruthy();
      secondDir = mkdtempSync(join(tmpdir(), 'cb-second-'));
      second = await startChildServer({
        dataDir: secondDir,
        apiKey: server.apiKey,
        databaseUrl: server.config.databaseUrl,
        env: { ...(s3.env(PREFIX) as Record<string, string>), SECRETS_KEY, LOG_LEVEL: 'error' },
      });
      // The first server's link, through the second server: the signing secret and the file are shared.
      const link = new URL(made.recording!.file_link);
      const there = `${second.url}${link.pathname}${link.search}`;
      const whole = await fetch(there);
      expect(whole.status).toBe(200);
      expect((await whole.arrayBuffer()).byteLength).toBe(made.recording!.size);
      const part = await fetch(there, { headers: { range: 'bytes=0-99' } });
      expect(part.status).toBe(206);
      expect((await part.arrayBuffer()).byteLength).toBe(100);
      const viaApi = await second.request(`/v1/sessions/${made.sessionId}/recordings/primary/fetch`, { headers: { range: 'bytes=4-7' } });
      expect(viaApi.status).toBe(206);
      expect(await viaApi.text()).toBe('ftyp');
      const download = await second.request(made.download!, { headers: { range: 'bytes=499-500' } });
      expect(download.status).toBe(206);
      expect(await download.text()).toBe('ab');

      const s = await createSession(second as Requester, {
        browser: { ...HEADLESS, extensions: [made.extensionId], profile: { name: 'shop' } },
        session: NO_RECORDING,
      });
      try {
        expect(await inspect(s.cdp_url)).toEqual({ marker: 'marked by the extension', user: 'test-buyer', cart: 'cart-42' });
      } finally {
        await endSession(second as Requester, s.id);
      }
      for (const area of ['recordings', 'downloads', 'extensions', 'profiles']) expect(filesOfArea(secondDir, area), area).toEqual([]);
    });
  });

  it('deleting the project through the admin API removes its files from the bucket, task artifacts included', { timeout: 60_000 }, async () => {
    const [{ project_id }] = await server.db.query<{ project_id: string }>('SELECT project_id FROM sessions WHERE id = $1', [made.sessionId]);
    const areas = ['recordings', 'downloads', 'extensions', 'profiles', 'task-artifacts'];
    for (const area of areas) expect((await bucketKeys(area)).length, area).toBeGreaterThan(0);
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    // Sessions end in the background: the deletion waits for none to be running.
    await eventually(
      async () => (await fetch(`${server.url}/admin/v1/projects/${project_id}`, { method: 'DELETE', headers: admin })).status === 200,
      30_000,
      'the project deleted',
    );
    for (const area of areas) expect(await bucketKeys(area), area).toEqual([]);
  });
});
