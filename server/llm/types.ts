// The conversation as the agent tools write it, whatever the provider's protocol: the
// adapters (openai.ts, anthropic.ts) translate it to their wire format and back.

export type Content = { type: 'text'; text: string } | { type: 'image'; mediaType: 'image/png' | 'image/jpeg'; data: string };

export interface ToolCall {
  /** The provider's id of the call, echoed in its result. */
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export type Message =
  | { role: 'user'; content: Content[] }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[] }
  /** The outcome of one tool call of the assistant message before it. */
  | { role: 'tool'; callId: string; name: string; text: string };

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  maxTokens?: number;
  signal?: AbortSignal;
  /**
   * This turn is the answer, in this JSON Schema: the adapter asks for it in its protocol's
   * structured output mode (OpenAI response_format json_schema, Anthropic a forced tool),
   * and the reply's text is the JSON `{"answer": …}`.
   */
  answerSchema?: Record<string, unknown>;
}

/** The one property of the object a structured answer comes in: some modes take an object only. */
export function answerEnvelope(schema: Record<string, unknown>): Record<string, unknown> {
  return { type: 'object', properties: { answer: schema }, required: ['answer'], additionalProperties: false };
}

export interface ChatReply {
  text: string;
  toolCalls: ToolCall[];
  usage: { inputTokens: number; outputTokens: number };
}

export interface LanguageModel {
  readonly provider: 'openai' | 'anthropic';
  readonly model: string;
  /** Whether observations may carry screenshots. */
  readonly images: boolean;
  chat(req: ChatRequest): Promise<ChatReply>;
}

/** The model's server failed or answered what the adapter cannot read. Never holds the key. */
export class LlmError extends Error {
  constructor(
    message: string,
    /** The provider's HTTP status, when it answered. */
    readonly status?: number,
  ) {
    super(message);
  }
}
