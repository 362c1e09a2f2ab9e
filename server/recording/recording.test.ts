// Recordings through the real server: a session's screen recorded with real timing, paused
// and resumed, encoded to MP4 by ffmpeg when it ends (decoded here with ffprobe and timed
// against the session), listed, streamed with ranges, linked, deleted; and what happens
// with recording off, a deletion mid-session, and frames a killed server left behind.
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { hashKey } from '../auth/api-keys.js';
import { createSession } from '../sessions/test-support.js';
import { eventsOf, startFixtureServer, untilPasses, type FixtureServer } from '../input/test-support.js';

const VIEWPORT = { width: 800, height: 600 };
const HEADLESS = { headless: { active: true }, viewport: VIEWPORT };

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => execFile(file, args, { maxBuffer: 64 * 1024 * 1024 }, (err, out) => (err ? reject(err) : resolve(out))));
}

/** Decodes every frame of the file: duration (s), frames decoded, codec, size. */
async function probe(file: string) {
  const out = JSON.parse(
    await run('ffprobe', [
      '-v',
      'error',
      '-count_frames',
      '-show_entries',
      'format=duration,format_name:stream=codec_name,width,height,nb_read_frames',
      '-of',
      'json',
      file,
    ]),
  );
  const s = out.streams[0];
  return {
    duration: Number(out.format.duration),
    frames: Number(s.nb_read_frames),
    codec: s.codec_name as string,
    width: s.width as number,
    height: s.height as number,
    format: out.format.format_name as string,
  };
}

describe('recordings', () => {
  let server: TestServer;
  let fixtures: FixtureServer;
  let work: string;

  const listOf = async (id: string) => {
    const res = await server.request(`/v1/sessions/${id}/recordings`);
    return { status: res.status, body: (await res.json()) as any };
  };
  const waitForRecording = (id: string) =>
    untilPasses(async () => {
      const l = await listOf(id);
      expect(l.body.data.count).toBe(1);
      return l.body.data.items[0];
    }, 90_000);
  const post = (path: string) => server.request(path, { method: 'POST' });

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'cb-recording-test-'));
    server = await startTestServer({ env: { RECORDING_FPS: '10' } });
    fixtures = await startFixtureServer();
  });

  afterAll(async () => {
    await server?.close();
    await fixtures?.close();
    rmSync(work, { recursive: true, force: true });
  });

  let recorded: { id: string; item: any; file: string };

  it('records the screen with real timing, pauses and resumes, and stores an MP4 with its event when the session ends', async () => {
    const s = await createSession(server, { session: { initial_url: fixtures.url('/animate') }, browser: HEADLESS });
    // Recording time is what is tested: the video's length and frame rate are checked below.
    await sleep(2_500);
    const paused = await post(`/v1/sessions/${s.id}/recordings/pause`);
    expect(paused.status).toBe(200);
    expect(await paused.json()).toEqual({ data: { status: 'paused' } });
    // Pausing a paused recording is accepted.
    expect((await post(`/v1/sessions/${s.id}/recordings/pause`)).status).toBe(200);
    // The pause's length is what is tested (paused_ms between 1.7 and 3 s, below).
    await sleep(2_000);
    const resumed = await post(`/v1/sessions/${s.id}/recordings/resume`);
    expect(await resumed.json()).toEqual({ data: { status: 'recording' } });
    expect((await post(`/v1/sessions/${s.id}/recordings/resume`)).status).toBe(200);
    // More recording time after the resume: the video must last the session less the pause.
    await sleep(2_000);
    // None while the session runs: the video is made at the end.
    expect((await listOf(s.id)).body).toEqual({ data: { count: 0, items: [] } });
    expect((await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);

    const item = await waitForRecording(s.id);
    expect(item).toMatchObject({ is_primary: true, suggested_file_name: `session-${s.id}.mp4` });
    expect(item.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(item.file_link).toMatch(new RegExp(`^${server.config.publicUrl}/files/recordings/${item.id}\\.mp4\\?expires=\\d+&signature=`));

    // The file decodes, and lasts as long as the session ran, less the pause.
    const res = await server.request(`/v1/sessions/${s.id}/recordings/primary/fetch`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('video/mp4');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(Number(res.headers.get('content-length'))).toBe(bytes.length);
    expect(bytes.length).toBe(item.size);
    const file = join(work, 'recording.mp4');
    writeFileSync(file, bytes);
    const video = await probe(file);
    expect(video.format).toContain('mp4');
    expect(video.codec).toBe('h264');
    expect([video.width, video.height]).toEqual([VIEWPORT.width, VIEWPORT.height]);
    // An animated page: about RECORDING_FPS frames a second of recording.
    expect(video.frames).toBeGreaterThan(video.duration * 5);
    expect(video.frames).toBeLessThan(video.duration * 10 + 5);

    const [row] = await server.db.query<{ started_at: Date; ended_at: Date; paused_ms: number; duration_ms: number }>(
      'SELECT s.started_at, s.ended_at, r.paused_ms, r.duration_ms FROM sessions s JOIN recordings r ON r.session_id = s.id WHERE s.id = $1',
      [s.id],
    );
    expect(row!.paused_ms).toBeGreaterThan(1_700);
    expect(row!.paused_ms).toBeLessThan(3_000);
    const ran = row!.ended_at.getTime() - row!.started_at.getTime() - row!.paused_ms;
    expect(Math.abs(video.duration * 1000 - ran)).toBeLessThan(500);
    expect(Math.abs(video.duration * 1000 - row!.duration_ms)).toBeLessThan(100);
    expect(item.duration).toBeCloseTo(row!.duration_ms / 1000, 3);

    const ready = (await eventsOf(server.db, s.id)).filter((e) => e.type === 'session.recording.ready');
    expect(ready).toHaveLength(1);
    expect(ready[0]!.data).toEqual({
      session_id: s.id,
      duration_ms: row!.duration_ms,
      size_bytes: bytes.length,
      session_dashboard_url: `${server.config.publicUrl}/console/sessions/${s.id}`,
    });
    // The frames are gone once the video is stored.
    expect(readdirSync(join(server.dataDir, 'recordings', '.work'))).toEqual([]);
    recorded = { id: s.id, item, file };
  });

  it('streams byte ranges: 206 for one range, 416 outside the file, the whole file for anything else', async () => {
    const { id, item } = recorded;
    const size = item.size as number;
    const get = (range: string) => server.request(`/v1/sessions/${id}/recordings/primary/fetch`, { headers: { range } });
    const whole = Buffer.from(await (await server.request(`/v1/sessions/${id}/recordings/primary/fetch`)).arrayBuffer());

    let res = await get('bytes=0-99');
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 0-99/${size}`);
    expect(res.headers.get('content-length')).toBe('100');
    expect(Buffer.from(await res.arrayBuffer()).equals(whole.subarray(0, 100))).toBe(true);

    res = await get(`bytes=${size - 10}-`);
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${size - 10}-${size - 1}/${size}`);
    expect(Buffer.from(await res.arrayBuffer()).equals(whole.subarray(size - 10))).toBe(true);

    res = await get('bytes=-20');
    expect(res.status).toBe(206);
    expect(Buffer.from(await res.arrayBuffer()).equals(whole.subarray(size - 20))).toBe(true);

    res = await get(`bytes=100-${size + 1000}`);
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes 100-${size - 1}/${size}`);
    await res.arrayBuffer();

    res = await get(`bytes=${size}-`);
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe(`bytes */${size}`);
    expect(await res.json()).toEqual({ error: { code: 416, message: 'Range not satisfiable' } });

    for (const ignored of ['bytes=0-1,5-6', 'items=0-5', 'nonsense']) {
      res = await get(ignored);
      expect(res.status, ignored).toBe(200);
      expect(Number(res.headers.get('content-length'))).toBe(size);
      await res.arrayBuffer();
    }
  });

  it('serves the listed file_link without a key, with ranges; a changed link answers 403', async () => {
    const { item } = recorded;
    const res = await fetch(item.file_link);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('video/mp4');
    expect((await res.arrayBuffer()).byteLength).toBe(item.size);
    const part = await fetch(item.file_link, { headers: { range: 'bytes=4-11' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).toString('latin1')).toBe('ftypisom');
    const tampered = item.file_link.replace(/signature=./, (m: string) => m.slice(0, -1) + (m.endsWith('A') ? 'B' : 'A'));
    expect((await fetch(tampered)).status).toBe(403);
    const expired = item.file_link.replace(/expires=\d+/, 'expires=1000');
    expect((await fetch(expired)).status).toBe(403);
  });

  it('another project sees none of it', async () => {
    const { id } = recorded;
    const key = `sk_test_other_${randomUUID()}`;
    const projectId = randomUUID();
    await server.db.query('INSERT INTO projects (id, name) VALUES ($1, $2)', [projectId, 'other']);
    await server.db.query("INSERT INTO api_keys (id, project_id, key_hash, prefix, source) VALUES ($1, $2, $3, 'sk_test', 'test')", [
      randomUUID(),
      projectId,
      hashKey(key),
    ]);
    for (const [method, path] of [
      ['GET', 'recordings'],
      ['GET', 'recordings/primary/fetch'],
      ['POST', 'recordings/pause'],
      ['DELETE', 'recordings/primary'],
    ] as const) {
      const res = await fetch(`${server.url}/v1/sessions/${id}/${path}`, { method, headers: { 'service-api-key': key } });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
  });

  it('deletes the primary recording: the file and the record go, a second delete answers 404', async () => {
    const { id, item } = recorded;
    const stored = readdirSync(join(server.dataDir, 'recordings'), { recursive: true }).filter((f) => String(f).endsWith('.mp4'));
    expect(stored).toHaveLength(1);
    const res = await server.request(`/v1/sessions/${id}/recordings/primary`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { status: 'deleted' } });
    expect((await listOf(id)).body).toEqual({ data: { count: 0, items: [] } });
    expect((await server.request(`/v1/sessions/${id}/recordings/primary/fetch`)).status).toBe(404);
    expect((await fetch(item.file_link)).status).toBe(404);
    expect(readdirSync(join(server.dataDir, 'recordings'), { recursive: true }).filter((f) => String(f).endsWith('.mp4'))).toEqual([]);
    const again = await server.request(`/v1/sessions/${id}/recordings/primary`, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect((await server.request(`/v1/sessions/${id}/recordings/${randomUUID()}`, { method: 'DELETE' })).status).toBe(404);
  });

  it('records nothing with recording off: an empty list, and 409 to pause, resume and delete', async () => {
    const s = await createSession(server, { session: { recording: { active: false } }, browser: HEADLESS });
    expect((await listOf(s.id)).body).toEqual({ data: { count: 0, items: [] } });
    for (const [method, path] of [
      ['POST', 'recordings/pause'],
      ['POST', 'recordings/resume'],
      ['DELETE', 'recordings/primary'],
    ] as const) {
      const res = await server.request(`/v1/sessions/${s.id}/${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(await res.json()).toEqual({ error: { code: 409, message: 'Recording is off for this session' } });
    }
    const fetched = await server.request(`/v1/sessions/${s.id}/recordings/primary/fetch`);
    expect(fetched.status).toBe(404);
    expect(readdirSync(join(server.dataDir, 'recordings', '.work'))).toEqual([]);
    expect((await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    // Ended: pausing a recording that is over is a conflict too.
    // Negative: no recording appears after the end (nothing could announce its absence).
    await sleep(500);
    expect((await listOf(s.id)).body.data.count).toBe(0);
    expect((await eventsOf(server.db, s.id)).map((e) => e.type)).toEqual(['session.completed']);
  });

  it('deleting the primary recording of a running session discards it: nothing is encoded', async () => {
    const s = await createSession(server, { session: { initial_url: fixtures.url('/animate') }, browser: HEADLESS });
    // Until a frame is kept: there is something recorded to discard.
    await untilPasses(() => expect(readdirSync(join(server.dataDir, 'recordings', '.work', s.id)).some((f) => f !== 'index.jsonl')).toBe(true));
    expect(existsSync(join(server.dataDir, 'recordings', '.work', s.id))).toBe(true);
    const res = await server.request(`/v1/sessions/${s.id}/recordings/primary`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    await untilPasses(() => expect(existsSync(join(server.dataDir, 'recordings', '.work', s.id))).toBe(false));
    expect((await post(`/v1/sessions/${s.id}/recordings/pause`)).status).toBe(409);
    expect((await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    // Negative: nothing is encoded after the end (nothing could announce its absence).
    await sleep(1_000);
    expect((await listOf(s.id)).body.data.count).toBe(0);
    expect((await eventsOf(server.db, s.id)).map((e) => e.type)).toEqual(['session.completed']);
    // After the end, pause and resume conflict: the session is not running.
    expect((await post(`/v1/sessions/${s.id}/recordings/resume`)).status).toBe(409);
  });

  it('records a session that ends before the screencast sent a frame: the screen as it is at the end', async () => {
    // initial_url is loaded and painted before the recording begins, a still page paints
    // nothing more, and the session ends at once: no frame came from the screencast.
    const s = await createSession(server, { session: { initial_url: fixtures.url('/colour/green') }, browser: HEADLESS });
    expect((await server.request(`/v1/sessions/${s.id}`, { method: 'DELETE' })).status).toBe(200);
    const item = await waitForRecording(s.id);
    const file = join(work, `${s.id}.mp4`);
    writeFileSync(file, Buffer.from(await (await server.request(`/v1/sessions/${s.id}/recordings/primary/fetch`)).arrayBuffer()));
    const p = await probe(file);
    expect(p.frames).toBeGreaterThanOrEqual(1);
    // It shows the page: green, not a blank frame.
    const pixel = await new Promise<Buffer>((resolve, reject) =>
      execFile(
        'ffmpeg',
        ['-v', 'error', '-i', file, '-frames:v', '1', '-vf', 'crop=2:2:400:300', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
        { encoding: 'buffer' },
        (err, out) => (err ? reject(err) : resolve(out)),
      ),
    );
    const [r, g, b] = pixel; // the first of the 2x2 (yuv420p cannot be cropped to one pixel)
    expect(g).toBeGreaterThan(100);
    expect(r).toBeLessThan(60);
    expect(b).toBeLessThan(60);
  });

  it('answers 404 for a session that does not exist', async () => {
    const unknown = randomUUID();
    for (const [method, path] of [
      ['GET', 'recordings'],
      ['GET', 'recordings/primary/fetch'],
      ['POST', 'recordings/pause'],
      ['POST', 'recordings/resume'],
      ['DELETE', 'recordings/primary'],
    ] as const) {
      expect((await server.request(`/v1/sessions/${unknown}/${path}`, { method })).status, `${method} ${path}`).toBe(404);
    }
  });

  it('encodes, at the next start, the frames a killed server left behind', async () => {
    const dataDir = join(work, 'data');
    const first = await startTestServer({ env: { DATA_DIR: dataDir } });
    const id = randomUUID();
    const key = first.apiKey;
    let projectId: string;
    try {
      [{ project_id: projectId }] = await first.db.query<{ project_id: string }>('SELECT project_id FROM api_keys LIMIT 1');
      // What a kill -9 leaves: the session's row (failed at the next start) and its frames.
      await first.db.query(
        `INSERT INTO sessions (id, project_id, status, node_id, configuration, cdp_token, live_view_token, started_at)
         VALUES ($1, $2, 'running', 'gone-node', '{}', 'x', 'y', now())`,
        [id, projectId],
      );
    } finally {
      await first.close();
    }
    const dir = join(dataDir, 'recordings', '.work', id);
    mkdirSync(dir, { recursive: true });
    const lines: string[] = [];
    for (const [i, t] of [0, 400, 900].entries()) {
      const file = `000000${i + 1}.jpg`;
      await run('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', `testsrc=size=320x240:rate=1`, '-frames:v', '1', '-y', join(dir, file)]);
      lines.push(JSON.stringify({ file, t, w: 320, h: 240 }));
    }
    writeFileSync(join(dir, 'index.jsonl'), lines.join('\n') + '\n{"file":"0000004.jpg","t":1'); // the last line cut short
    const second = await startTestServer({ env: { DATA_DIR: dataDir } });
    try {
      const rows = await untilPasses(async () => {
        const r = await second.db.query<{ duration_ms: number; size_bytes: number }>('SELECT * FROM recordings WHERE session_id = $1', [id]);
        expect(r).toHaveLength(1);
        return r;
      }, 30_000);
      // The last frame gets a second: 900 + 1000 ms.
      expect(rows[0]!.duration_ms).toBe(1_900);
      const events = await eventsOf(second.db, id);
      expect(events.find((e) => e.type === 'session.recording.ready')?.data).toMatchObject({
        session_id: id,
        duration_ms: 1_900,
        size_bytes: rows[0]!.size_bytes,
      });
      const res = await fetch(`${second.url}/v1/sessions/${id}/recordings/primary/fetch`, { headers: { 'service-api-key': key } });
      expect(res.status).toBe(200);
      const file = join(work, 'recovered.mp4');
      writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      const video = await probe(file);
      expect(video.duration).toBeCloseTo(1.9, 1);
      expect(video.frames).toBe(4);
      expect(existsSync(dir)).toBe(false);
    } finally {
      await second.close();
    }
  });
});
