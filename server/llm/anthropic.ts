// The Anthropic Messages protocol (POST {base}/v1/messages): tool_use blocks in the
// assistant's turn, tool_result and image blocks in the user's; turns alternate, so the
// tool results and the observation that follows them go in one user turn.
import { postJson } from './http.js';
import { answerEnvelope, LlmError, type ChatReply, type ChatRequest, type Content, type Message, type ToolSpec } from './types.js';

const VERSION = '2023-06-01';
const DEFAULT_MAX_TOKENS = 4096;
/** The forced tool of a structured answer (ChatRequest.answerSchema). */
const ANSWER_TOOL = 'answer';

type Block = Record<string, unknown>;

export function anthropicBody(model: string, req: ChatRequest): Record<string, unknown> {
  const messages: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]) => {
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const m of req.messages) {
    const b = blocks(m);
    // The API refuses an empty turn: an assistant reply of nothing is left out.
    if (b.length) push(m.role === 'assistant' ? 'assistant' : 'user', b);
  }
  return {
    model,
    max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
    system: req.system,
    messages,
    ...(req.tools.length || req.answerSchema ? { tools: [...req.tools, ...(req.answerSchema ? [answerTool(req.answerSchema)] : [])].map(wireTool) } : {}),
    // The protocol's structured output: a tool the model must call. The others stay listed,
    // as the API wants for a conversation that holds their calls.
    ...(req.answerSchema ? { tool_choice: { type: 'tool', name: ANSWER_TOOL } } : {}),
  };
}

const answerTool = (schema: Record<string, unknown>): ToolSpec => ({ name: ANSWER_TOOL, description: 'Give the answer.', parameters: answerEnvelope(schema) });
const wireTool = (t: ToolSpec) => ({ name: t.name, description: t.description, input_schema: t.parameters });

function blocks(m: Message): Block[] {
  switch (m.role) {
    case 'user':
      return m.content.map(content);
    case 'assistant':
      return [
        ...(m.text ? [{ type: 'text', text: m.text }] : []),
        ...m.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments })),
      ];
    case 'tool':
      return [{ type: 'tool_result', tool_use_id: m.callId, content: m.text }];
  }
}

function content(c: Content): Block {
  return c.type === 'text' ? { type: 'text', text: c.text } : { type: 'image', source: { type: 'base64', media_type: c.mediaType, data: c.data } };
}

export function readAnthropicReply(body: unknown, structured = false): ChatReply {
  const b = body as { content?: Block[]; usage?: { input_tokens?: number; output_tokens?: number } };
  if (!Array.isArray(b?.content)) throw new LlmError('The model answered no content');
  const text = b.content
    .filter((x) => x.type === 'text')
    .map((x) => String(x.text ?? ''))
    .join('\n');
  const usage = { inputTokens: b.usage?.input_tokens ?? 0, outputTokens: b.usage?.output_tokens ?? 0 };
  // A structured answer is the forced tool's input, given back as the reply's text.
  const forced = structured ? b.content.find((x) => x.type === 'tool_use' && x.name === ANSWER_TOOL) : undefined;
  if (forced) return { text: JSON.stringify(forced.input ?? {}), toolCalls: [], usage };
  const toolCalls = b.content
    .filter((x) => x.type === 'tool_use')
    .map((x) => ({ id: String(x.id), name: String(x.name), arguments: (x.input && typeof x.input === 'object' ? x.input : {}) as Record<string, unknown> }));
  return { text, toolCalls, usage };
}

/** {base}/v1/messages, whether the base names the version or not. */
export function messagesUrl(baseUrl: string): string {
  return /\/v1$/.test(baseUrl) ? `${baseUrl}/messages` : `${baseUrl}/v1/messages`;
}

export async function anthropicChat(o: { baseUrl: string; apiKey?: string; model: string; timeoutMs: number }, req: ChatRequest): Promise<ChatReply> {
  const headers: Record<string, string> = { 'anthropic-version': VERSION, ...(o.apiKey ? { 'x-api-key': o.apiKey } : {}) };
  return readAnthropicReply(await postJson(messagesUrl(o.baseUrl), headers, anthropicBody(o.model, req), o.timeoutMs, req.signal), Boolean(req.answerSchema));
}
