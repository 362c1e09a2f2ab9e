// The adapter against a local server speaking each protocol: what goes on the wire (tools,
// images, tool results, the key's header) and what comes back (text, tool calls), errors
// and time-outs that never carry the key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { languageModel, LlmError, type ChatRequest } from './index.js';
import { startScriptedModel, type ScriptedModelServer } from './scripted-server.js';

const KEY = 'sk-secret-llm-key-0123456789';
const PNG = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64');

const request = (): ChatRequest => ({
  system: 'You drive a browser.',
  tools: [{ name: 'click', description: 'Click an element', parameters: { type: 'object', properties: { ref: { type: 'string' } }, required: ['ref'] } }],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Task: buy it' },
        { type: 'image', mediaType: 'image/png', data: PNG },
      ],
    },
    { role: 'assistant', text: 'Clicking.', toolCalls: [{ id: 'call_a', name: 'click', arguments: { ref: 'e3' } }] },
    { role: 'tool', callId: 'call_a', name: 'click', text: 'Clicked.' },
    { role: 'user', content: [{ type: 'text', text: 'Page snapshot: …' }] },
  ],
});

describe('language model adapter', () => {
  let model: ScriptedModelServer;
  beforeAll(async () => {
    model = await startScriptedModel();
  });
  afterAll(() => model?.close());

  it('OpenAI Chat Completions: functions, data-URL images, tool messages, Bearer key; tool calls read back', async () => {
    model.script([{ text: 'Next I type.', toolCalls: [{ name: 'click', arguments: { ref: 'e9' } }] }]);
    const llm = languageModel({ provider: 'openai', baseUrl: model.baseUrl('openai'), apiKey: KEY, model: 'gpt-test', images: true }, { timeoutMs: 5000 });
    const reply = await llm.chat(request());
    expect(reply.text).toBe('Next I type.');
    expect(reply.toolCalls).toEqual([{ id: expect.any(String), name: 'click', arguments: { ref: 'e9' } }]);
    expect(reply.usage).toEqual({ inputTokens: 100, outputTokens: 10 });

    const sent = model.received.at(-1)!;
    expect(sent.path).toBe('/v1/chat/completions');
    expect(sent.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(sent.body.model).toBe('gpt-test');
    expect(sent.body.tools).toEqual([
      { type: 'function', function: { name: 'click', description: 'Click an element', parameters: request().tools[0].parameters } },
    ]);
    expect(sent.body.messages).toEqual([
      { role: 'system', content: 'You drive a browser.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Task: buy it' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
        ],
      },
      { role: 'assistant', content: 'Clicking.', tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'click', arguments: '{"ref":"e3"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: 'Clicked.' },
      { role: 'user', content: [{ type: 'text', text: 'Page snapshot: …' }] },
    ]);
  });

  it('Anthropic Messages: input_schema tools, base64 image blocks, tool_result merged into the next user turn, x-api-key', async () => {
    model.script([{ toolCalls: [{ name: 'click', arguments: { ref: 'e4' } }] }]);
    const llm = languageModel(
      { provider: 'anthropic', baseUrl: model.baseUrl('anthropic'), apiKey: KEY, model: 'claude-test', images: true },
      { timeoutMs: 5000 },
    );
    const reply = await llm.chat(request());
    expect(reply.text).toBe('');
    expect(reply.toolCalls).toEqual([{ id: expect.any(String), name: 'click', arguments: { ref: 'e4' } }]);

    const sent = model.received.at(-1)!;
    expect(sent.path).toBe('/v1/messages');
    expect(sent.headers['x-api-key']).toBe(KEY);
    expect(sent.headers['anthropic-version']).toBe('2023-06-01');
    expect(sent.body).toMatchObject({ model: 'claude-test', system: 'You drive a browser.', max_tokens: 4096 });
    expect(sent.body.tools).toEqual([{ name: 'click', description: 'Click an element', input_schema: request().tools[0].parameters }]);
    expect(sent.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Task: buy it' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Clicking.' },
          { type: 'tool_use', id: 'call_a', name: 'click', input: { ref: 'e3' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_a', content: 'Clicked.' },
          { type: 'text', text: 'Page snapshot: …' },
        ],
      },
    ]);
  });

  it('an empty reply of the model stays valid on the wire in both protocols', async () => {
    const messages: ChatRequest['messages'] = [
      { role: 'user', content: [{ type: 'text', text: 'Task' }] },
      { role: 'assistant', text: '', toolCalls: [] },
      { role: 'user', content: [{ type: 'text', text: 'Call a tool.' }] },
    ];
    model.script([{ text: 'ok' }, { text: 'ok' }]);
    await languageModel({ provider: 'openai', baseUrl: model.baseUrl('openai'), apiKey: KEY, model: 'm', images: false }, { timeoutMs: 5000 }).chat({
      ...request(),
      messages,
    });
    expect(model.received.at(-1)!.body.messages[2]).toEqual({ role: 'assistant', content: '' });
    await languageModel({ provider: 'anthropic', baseUrl: model.baseUrl('anthropic'), apiKey: KEY, model: 'm', images: false }, { timeoutMs: 5000 }).chat({
      ...request(),
      messages,
    });
    expect(model.received.at(-1)!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Task' },
          { type: 'text', text: 'Call a tool.' },
        ],
      },
    ]);
  });

  it('a structured answer turn: OpenAI response_format json_schema without tools; Anthropic the tools and a forced answer tool, read back as text', async () => {
    const schema = { type: 'object', required: ['price'], properties: { price: { type: 'number' } } };
    const envelope = { type: 'object', properties: { answer: schema }, required: ['answer'], additionalProperties: false };
    model.script([{ text: '{"answer": {"price": 3}}' }, { toolCalls: [{ name: 'answer', arguments: { answer: { price: 3 } } }] }]);
    const openai = await languageModel(
      { provider: 'openai', baseUrl: model.baseUrl('openai'), apiKey: KEY, model: 'm', images: false },
      { timeoutMs: 5000 },
    ).chat({
      ...request(),
      answerSchema: schema,
    });
    expect(openai).toMatchObject({ text: '{"answer": {"price": 3}}', toolCalls: [] });
    const o = model.received.at(-1)!.body;
    expect(o.response_format).toEqual({ type: 'json_schema', json_schema: { name: 'answer', strict: false, schema: envelope } });
    expect(o.tools).toBeUndefined();
    const anthropic = await languageModel(
      { provider: 'anthropic', baseUrl: model.baseUrl('anthropic'), apiKey: KEY, model: 'm', images: false },
      { timeoutMs: 5000 },
    ).chat({
      ...request(),
      answerSchema: schema,
    });
    expect(anthropic).toMatchObject({ text: '{"answer":{"price":3}}', toolCalls: [] });
    const a = model.received.at(-1)!.body;
    expect(a.tool_choice).toEqual({ type: 'tool', name: 'answer' });
    expect(a.tools.map((t: any) => t.name)).toEqual(['click', 'answer']);
    expect(a.tools[1].input_schema).toEqual(envelope);
  });

  it('no key configured: no authorization header (a local Ollama)', async () => {
    model.script([{ text: 'done' }]);
    await languageModel({ provider: 'openai', baseUrl: model.baseUrl('openai'), apiKey: undefined, model: 'llama', images: false }, { timeoutMs: 5000 }).chat(
      request(),
    );
    expect(model.received.at(-1)!.headers.authorization).toBeUndefined();
  });

  it('errors name the status and the provider message, never the key; a slow model times out', async () => {
    for (const provider of ['openai', 'anthropic'] as const) {
      const llm = languageModel({ provider, baseUrl: model.baseUrl(provider), apiKey: KEY, model: 'm', images: false }, { timeoutMs: 300 });
      model.script([{ status: 529 }, { delayMs: 1000, text: 'late' }]);
      const overloaded = await llm.chat(request()).catch((e: unknown) => e);
      expect(overloaded).toBeInstanceOf(LlmError);
      expect((overloaded as LlmError).status).toBe(529);
      expect((overloaded as Error).message).toBe("The model's server answered 529: scripted error 529");
      const slow = await llm.chat(request()).catch((e: unknown) => e);
      expect((slow as Error).message).toBe('The model did not answer within 0.3 s');
      for (const e of [overloaded, slow]) expect(JSON.stringify({ m: (e as Error).message, s: (e as Error).stack })).not.toContain(KEY);
    }
    const closed = await startScriptedModel();
    const closedUrl = closed.baseUrl('openai');
    await closed.close();
    const unreachable = languageModel({ provider: 'openai', baseUrl: closedUrl, apiKey: KEY, model: 'm', images: false }, { timeoutMs: 2000 });
    await expect(unreachable.chat(request())).rejects.toThrow(/^The model's server could not be reached \(.*ECONNREFUSED/);
  });
});
