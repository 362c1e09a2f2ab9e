// perform-web-task with a small local model over the OpenAI protocol (as Ollama and
// llama.cpp serve one): text only, a 4k context (LLM_CONTEXT_TOKENS). The local model server
// replays a conversation kept as a fixture (fixtures/agent/small-model-signup.json) with a
// malformed call, calls written as text, an unknown tool and an answer in text, and the test
// checks what the agent told the model, what it did to the pages, and that every request
// fitted. The fixture is written by hand in the shapes such models answer in: no model can
// run on this project's machines to record one (no weights can be fetched here).
import { readFileSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens } from './observation.js';
import { startScriptedModel, type ScriptedModelServer } from '../llm/scripted-server.js';
import { createSession, endSession, HEADLESS } from '../sessions/test-support.js';
import { startTestServer, type TestServer } from '../testing/harness.js';
import { lastObservation, lastToolResults, refOf, replay, type Recording } from './test-support.js';
import { startTestSite, type TestSite } from './test-site.js';

const CONTEXT_TOKENS = 4096;
const recording = JSON.parse(readFileSync(new URL('../../fixtures/agent/small-model-signup.json', import.meta.url), 'utf8')) as Recording;
/** What a request costs against the context, counted as the agent counts. */
const requestTokens = (body: any) =>
  estimateTokens(JSON.stringify(body.messages).length + JSON.stringify(body.tools ?? []).length + JSON.stringify(body.response_format ?? {}).length);

describe('perform-web-task with a small local model (OpenAI protocol, text only, 4k context)', () => {
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
        LLM_MODEL: 'qwen2.5:3b',
        LLM_IMAGES: 'false',
        LLM_CONTEXT_TOKENS: String(CONTEXT_TOKENS),
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await model?.close();
    await site?.close();
  });
  afterEach(() => expect(model.errors).toEqual([]));

  const perform = async (body: unknown, sessionId: string) => {
    const res = await server.request(`/v1/tools/perform-web-task?sessionId=${sessionId}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  it('replays the recorded conversation: malformed and text calls retried, the answer in text accepted after a structured answer turn', async () => {
    const s = await createSession(server, HEADLESS);
    model.script(replay(recording));
    const { prompt, path, output_schema } = recording.task;
    const r = await perform({ prompt, url: site.url(path), output_schema }, s.id);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.result.result).toEqual({ name: 'Ada Lovelace', plan: 'pro' });
    expect(r.body.data.result.steps.map((x: any) => [x.action, x.ok])).toEqual([
      ['type', true],
      ['type', true],
      ['click', true],
      ['select', true],
      ['click', true],
      ['click', true],
    ]);
    expect(site.submissions.slice(-2)).toEqual([
      { path: '/form/2', query: { name: 'Ada Lovelace', email: 'ada@example.com' } },
      { path: '/form/done', query: { name: 'Ada Lovelace', email: 'ada@example.com', plan: 'pro', terms: 'yes' } },
    ]);

    const sent = model.received.slice(-recording.replies.length).map((x) => x.body);
    expect(sent).toHaveLength(8);
    // What the model was told after each mistake.
    expect(lastToolResults(sent[1]).at(-1)).toMatch(/^The arguments of type were not valid JSON: \{"ref": "\w+", "text": "Ada Lovelace"\. Call it again/);
    expect(lastToolResults(sent[2]).at(-1)).toBe('Typed.');
    expect(lastToolResults(sent[4]).at(-1)).toMatch(/^There is no tool "submit_form"\. The tools are: navigate, click, type, /);
    expect(lastToolResults(sent[5]).at(-1)).toBe('Clicked.');
    // The call written as text is kept in the conversation as a call, its result beside it.
    const textCall = sent[2].messages.find((m: any) => m.tool_calls?.[0]?.id?.startsWith('text_call_'));
    expect(textCall.tool_calls[0].function.name).toBe('type');
    expect(sent[2].messages.some((m: any) => m.role === 'tool' && m.tool_call_id === textCall.tool_calls[0].id)).toBe(true);
    // The answer in text did not conform: the next turn asks for it in the structured mode, without tools.
    expect(lastObservation(sent[7])).toMatch(/^Your answer does not conform to the JSON Schema: answer must have required property 'plan'/);
    expect(sent[7].response_format).toEqual({
      type: 'json_schema',
      json_schema: {
        name: 'answer',
        strict: false,
        schema: { type: 'object', properties: { answer: output_schema }, required: ['answer'], additionalProperties: false },
      },
    });
    expect(sent[7].tools).toBeUndefined();
    for (const b of sent.slice(0, 7)) expect(b.tools.length).toBeGreaterThan(0);

    // The observation is the trimmed snapshot: no boxes, no bare wrappers, the fields named.
    const first = lastObservation(sent[0]);
    expect(first).toContain('textbox "Full name"');
    expect(first).not.toContain('[box=');
    expect(first).not.toMatch(/^\s*- generic \[[^\]]*\]( \[[^\]]*\])*:?$/m);
    expect(lastObservation(sent[5])).toContain('combobox "Plan"');
    expect(lastObservation(sent[5])).toContain('option "Pro"');
    // Text only, and every request within the context.
    for (const b of sent) {
      expect(JSON.stringify(b.messages)).not.toContain('image_url');
      expect(requestTokens(b)).toBeLessThan(CONTEXT_TOKENS);
    }
    await endSession(server, s.id);
  });

  it('a model that keeps erring is told each time, and the task fails after three such turns', async () => {
    const s = await createSession(server, HEADLESS);
    model.script([
      { toolCalls: [{ name: 'click', arguments: '{"ref": e3}' }] },
      { toolCalls: [{ name: 'press', arguments: { key: 'Enter' } }] },
      { text: 'I think the form is filled.' },
    ]);
    const r = await perform({ prompt: 'Sign up', url: site.url('/form/1'), output_schema: recording.task.output_schema }, s.id);
    expect(r).toEqual({ status: 422, body: { error: { code: 422, message: 'The agent gave up: it stopped acting without an answer' } } });
    const sent = model.received.slice(-3).map((x) => x.body);
    expect(lastToolResults(sent[1]).at(-1)).toMatch(/^The arguments of click were not valid JSON/);
    expect(lastToolResults(sent[2]).at(-1)).toMatch(/^There is no tool "press"/);
    await endSession(server, s.id);
  });

  it('a long page: the model sees what is in view and is told how much more there is below', async () => {
    const s = await createSession(server, HEADLESS);
    model.script([
      (body) => ({ toolCalls: [{ name: 'click', arguments: { ref: refOf(lastObservation(body), 'button', 'Show details') } }] }),
      (body) => {
        // Show details pushed Buy 900 px down, below the 720 px viewport.
        const seen = lastObservation(body);
        expect(seen).toContain('heading "Offer"');
        expect(seen).not.toContain('button "Buy"');
        expect(seen).toContain('Out of view (scroll to reach them): 0 interactive elements above, 1 below.');
        return { toolCalls: [{ name: 'scroll', arguments: { direction: 'down' } }] };
      },
      (body) => {
        // The whole observation in the message: a failure says what the model was shown.
        const seen = lastObservation(body);
        expect(seen, seen).toContain('button "Buy"');
        return { text: 'The Buy button is there.' };
      },
    ]);
    const shown = await perform({ prompt: 'Find the Buy button', url: site.url('/moving') }, s.id);
    expect(shown.status).toBe(200);
    await endSession(server, s.id);
  });
});
