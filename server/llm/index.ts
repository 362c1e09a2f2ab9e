// Language models behind one adapter: the operator's model (LLM_PROVIDER, LLM_BASE_URL,
// LLM_API_KEY, LLM_MODEL) spoken to in its protocol, OpenAI Chat Completions or Anthropic
// Messages, with tool calling and image input, by plain fetch. The key stays in this
// closure: it is in no object a log line could print.
import type { LlmConfig } from '../config/config.js';
import { anthropicChat } from './anthropic.js';
import { openAiChat } from './openai.js';
import type { ChatRequest, LanguageModel } from './types.js';

export * from './types.js';

export function languageModel(config: LlmConfig, o: { timeoutMs: number; model?: string }): LanguageModel {
  const { provider, baseUrl, apiKey } = config;
  const model = o.model ?? config.model;
  const call = { baseUrl, apiKey, model, timeoutMs: o.timeoutMs };
  return {
    provider,
    model,
    images: config.images,
    chat: (req: ChatRequest) => (provider === 'openai' ? openAiChat(call, req) : anthropicChat(call, req)),
  };
}
