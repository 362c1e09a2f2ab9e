// The OpenAI Chat Completions protocol (POST {base}/chat/completions), which OpenAI and the
// compatible servers (vLLM, Ollama, LM Studio, most gateways) speak: tools as functions,
// images as data: URLs in user messages.
import { postJson } from './http.js';
import { answerEnvelope, LlmError, type ChatReply, type ChatRequest, type Content, type Message, type ToolCall } from './types.js';

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string | Record<string, unknown> };
}

export function openAiBody(model: string, req: ChatRequest): Record<string, unknown> {
  return {
    model,
    messages: [{ role: 'system', content: req.system }, ...req.messages.map(wireMessage)],
    // A structured answer goes without tools: llama.cpp refuses a schema beside them.
    ...(req.tools.length && !req.answerSchema
      ? { tools: req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })) }
      : {}),
    // OpenAI, Ollama, llama.cpp and vLLM all take json_schema; not strict, which would refuse
    // many schemas a client may send (optional properties, formats).
    ...(req.answerSchema
      ? { response_format: { type: 'json_schema', json_schema: { name: 'answer', strict: false, schema: answerEnvelope(req.answerSchema) } } }
      : {}),
    // No max_tokens: newer OpenAI models refuse it (max_completion_tokens), compatible servers
    // may not know the other; the agent's answers are short anyway.
  };
}

function wireMessage(m: Message): Record<string, unknown> {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: m.content.map(wireContent) };
    case 'assistant':
      return {
        role: 'assistant',
        // Content may be null beside tool calls only.
        content: m.text || (m.toolCalls.length ? null : ''),
        ...(m.toolCalls.length
          ? {
              tool_calls: m.toolCalls.map(
                (c): WireToolCall => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }),
              ),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: m.callId, content: m.text };
  }
}

function wireContent(c: Content): Record<string, unknown> {
  return c.type === 'text' ? { type: 'text', text: c.text } : { type: 'image_url', image_url: { url: `data:${c.mediaType};base64,${c.data}` } };
}

export function readOpenAiReply(body: unknown): ChatReply {
  const b = body as {
    choices?: { message?: { content?: string | null; tool_calls?: WireToolCall[] } }[];
    usage?: { prompt_tokens?: number; completion_tokens?: number };
  };
  const message = b?.choices?.[0]?.message;
  if (!message) throw new LlmError('The model answered no message (choices[0].message is missing)');
  const toolCalls: ToolCall[] = (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function?.name, arguments: parseArguments(c.function?.arguments) }));
  return {
    text: message.content ?? '',
    toolCalls,
    usage: { inputTokens: b.usage?.prompt_tokens ?? 0, outputTokens: b.usage?.completion_tokens ?? 0 },
  };
}

/** Arguments come as a JSON string; one that does not parse is given to the agent as such, to report. */
function parseArguments(text: string | Record<string, unknown> | undefined): Record<string, unknown> {
  if (!text) return {};
  // Some compatible servers send the object itself.
  if (typeof text === 'object') return Array.isArray(text) ? { _invalid: JSON.stringify(text) } : text;
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { _invalid: text };
  } catch {
    return { _invalid: text };
  }
}

export async function openAiChat(o: { baseUrl: string; apiKey?: string; model: string; timeoutMs: number }, req: ChatRequest): Promise<ChatReply> {
  const headers: Record<string, string> = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
  return readOpenAiReply(await postJson(`${o.baseUrl}/chat/completions`, headers, openAiBody(o.model, req), o.timeoutMs, req.signal));
}
