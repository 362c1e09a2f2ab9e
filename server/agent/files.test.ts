// Files for a session's agent (POST /v1/sessions/{id}/agent/files) end to end: uploaded
// over real HTTP (a ZIP unpacked, a single file kept), refused past the limits, then used by
// perform-web-task in that session against the fixture site: the model is told the files,
// reads one and puts others into the page's file inputs, and the page gets their contents.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startScriptedModel, type ScriptedModelServer } from '../llm/scripted-server.js';
import { createSession, endSession, HEADLESS } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { zipOf } from '../testing/zip-of.js';
import { lastObservation, lastToolResults, refOf } from './test-support.js';
import { startTestSite, type TestSite } from './test-site.js';

const LIMIT = 64 * 1024;
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const systemOf = (body: any): string => (body.messages as any[]).find((m) => m.role === 'system')?.content ?? '';
const toolsOf = (body: any): string[] => (body.tools as any[]).map((t) => t.function.name);

describe('files for the agent of a session', () => {
  let site: TestSite;
  let model: ScriptedModelServer;
  let server: TestServer;

  beforeAll(async () => {
    site = await startTestSite();
    model = await startScriptedModel();
    server = await startTestServer({
      env: {
        LLM_PROVIDER: 'openai',
        LLM_BASE_URL: model.baseUrl('openai'),
        LLM_MODEL: 'gpt-test',
        LLM_IMAGES: 'false',
        SESSION_UPLOADS_MAX_BYTES: String(LIMIT),
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await model?.close();
    await site?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  const upload = async (sessionId: string, name: string, content: string | Buffer) => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(Buffer.from(content))]), name);
    const res = await server.request(`/v1/sessions/${sessionId}/agent/files`, { method: 'POST', body: form });
    return { status: res.status, body: (await res.json()) as any };
  };
  const perform = async (sessionId: string, body: unknown) => {
    const res = await server.request(`/v1/tools/perform-web-task?sessionId=${sessionId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('unpacks a ZIP and keeps a file; the agent is told them, reads one and uploads others into the page', async () => {
    const s = await createSession(server, HEADLESS);

    // Without files the agent is offered no file actions.
    model.script([
      (body) => {
        expect(toolsOf(body)).not.toContain('read_file');
        expect(systemOf(body)).not.toContain('Files you have');
        return { toolCalls: [call('finish', { answer: 'nothing' })] };
      },
    ]);
    expect((await perform(s.id, { prompt: 'Nothing to do', url: site.url('/upload') })).status).toBe(200);

    const zip = await upload(s.id, 'orders.zip', await zipOf({ 'notes/hello.txt': 'Order number: 4711', 'data.csv': 'a,b\n1,2\n' }));
    expect(zip.status).toBe(200);
    expect(zip.body.data).toMatchObject({ status: 'uploaded', message: '2 files for the agent from orders.zip' });
    expect(new Set(zip.body.data.files)).toEqual(
      new Set([
        { name: 'notes/hello.txt', size: 18 },
        { name: 'data.csv', size: 8 },
      ]),
    );
    const single = await upload(s.id, 'letter.txt', 'Dear shop');
    expect(single).toMatchObject({ status: 200, body: { data: { status: 'uploaded', files: [{ name: 'letter.txt', size: 9 }] } } });
    // A binary file: uploadable, not readable.
    expect((await upload(s.id, 'photo.bin', Buffer.from([0x89, 0, 1, 2]))).status).toBe(200);

    model.script([
      (body) => {
        expect(toolsOf(body)).toEqual(expect.arrayContaining(['read_file', 'upload_file']));
        expect(systemOf(body)).toContain('Files you have');
        expect(systemOf(body)).toContain('data.csv (8 bytes), letter.txt (9 bytes), notes/hello.txt (18 bytes), photo.bin (4 bytes)');
        return {
          toolCalls: [call('read_file', { file: 'notes/hello.txt' }), call('read_file', { file: 'photo.bin' }), call('read_file', { file: 'nope.txt' })],
        };
      },
      (body) => {
        const results = lastToolResults(body);
        expect(results).toContain('Order number: 4711');
        expect(results.some((r) => r.includes('photo.bin is not a text file (4 bytes)'))).toBe(true);
        expect(results.some((r) => r.includes('You have no file named nope.txt'))).toBe(true);
        const input = refOf(lastObservation(body), 'button', 'Document');
        return { toolCalls: [call('upload_file', { ref: input, element: 'Document', files: ['letter.txt', 'data.csv'] })] };
      },
      (body) => {
        const button = refOf(lastObservation(body), 'button', 'Choose a file');
        return { toolCalls: [call('upload_file', { ref: button, element: 'Choose a file', files: ['notes/hello.txt'] })] };
      },
      { toolCalls: [call('finish', { answer: '4711' })] },
    ]);
    const done = await perform(s.id, { prompt: 'Send the documents', url: site.url('/upload') });
    expect(done.status).toBe(200);
    expect(done.body.data.result.result).toBe('4711');
    expect(done.body.data.result.steps.map((st: any) => [st.action, st.ok])).toEqual([
      ['read_file', true],
      ['read_file', true],
      ['read_file', false],
      ['upload_file', true],
      ['upload_file', true],
    ]);
    expect(done.body.data.result.steps[0].target).toBe('notes/hello.txt');
    await expect.poll(() => site.uploads.length).toBe(2);
    expect(site.uploads).toEqual([
      [
        { name: 'letter.txt', text: 'Dear shop' },
        { name: 'data.csv', text: 'a,b\n1,2\n' },
      ],
      [{ name: 'hello.txt', text: 'Order number: 4711' }],
    ]);
    await endSession(server, s.id);
  });

  it('refuses what is not an archive, past the limits, and sessions the project has not', async () => {
    const s = await createSession(server, HEADLESS);
    const notZip = await upload(s.id, 'broken.zip', 'not a zip at all');
    expect(notZip.status).toBe(400);
    expect(notZip.body.error.message).toContain('not a ZIP archive');
    const tooBig = await upload(s.id, 'big.txt', 'x'.repeat(LIMIT + 1));
    expect(tooBig.status).toBe(413);
    // Small packed, large unpacked: stopped at the limit, not unpacked whole.
    const bomb = await upload(s.id, 'zeros.zip', await zipOf({ 'zeros.txt': Buffer.alloc(LIMIT * 4) }));
    expect(bomb.status).toBe(413);
    expect(bomb.body.error.message).toContain(`unpacks to more than ${LIMIT} bytes`);
    // Two files that fit alone but not together.
    expect((await upload(s.id, 'half.txt', 'y'.repeat(LIMIT / 2 + 1))).status).toBe(200);
    const over = await upload(s.id, 'other-half.txt', 'z'.repeat(LIMIT / 2 + 1));
    expect(over.status).toBe(413);
    expect(over.body.error.message).toContain("The session's agent files would exceed");
    // Replacing a file counts only its new size.
    expect((await upload(s.id, 'half.txt', 'w'.repeat(LIMIT / 2 + 1))).status).toBe(200);

    expect((await upload('00000000-0000-4000-8000-000000000000', 'a.txt', 'a')).status).toBe(404);
    // Ended through DELETE: gone from the API.
    await endSession(server, s.id);
    expect((await upload(s.id, 'a.txt', 'a')).status).toBe(404);
  });
});
