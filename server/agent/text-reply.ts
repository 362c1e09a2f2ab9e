// What a model meant by a reply of plain text, no tool call: models without good tool
// calling (small local ones) write the call as text (`<tool_call>{"name": …}</tool_call>`,
// a JSON object with name and arguments, fenced or not) or write the answer itself as JSON,
// bare, in a ```json block, or with prose around it. The agent reads both, rather than
// failing a task the model has in fact done.
import type { ToolCall } from '../llm/index.js';
import type { AnswerSchema } from './answer-schema.js';

export type TextReading =
  | { kind: 'calls'; calls: ToolCall[] }
  | { kind: 'answer'; answer: unknown }
  /** JSON that looks meant as the answer but does not conform (or does not parse): why. */
  | { kind: 'wrong-answer'; why: string }
  | { kind: 'none' };

/** The JSON values the text holds, most likely first: fenced blocks, the whole text, then each balanced {…} or […]. */
export function jsonCandidates(text: string): { value?: unknown; source: string; error?: string }[] {
  const sources: string[] = [];
  for (const m of text.matchAll(/```(?:json|JSON)?\s*\n?([\s\S]*?)```/g)) sources.push(m[1].trim());
  for (const m of text.matchAll(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g)) sources.push(m[1].trim());
  sources.push(text.trim());
  sources.push(...balanced(text));
  const seen = new Set<string>();
  const out: { value?: unknown; source: string; error?: string }[] = [];
  for (const source of sources) {
    if (!source || seen.has(source)) continue;
    seen.add(source);
    try {
      out.push({ value: JSON.parse(source), source });
    } catch (err) {
      if (/^[[{]/.test(source)) out.push({ source, error: (err as Error).message });
    }
  }
  return out;
}

/** Each outermost {…} and […] of the text, brackets inside strings ignored. */
function balanced(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"' && depth > 0) inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if ((c === '}' || c === ']') && depth > 0 && --depth === 0) out.push(text.slice(start, i + 1));
  }
  return out;
}

/** A tool call written as JSON: {name, arguments} or {name, parameters}, or a list of them. */
function asCalls(value: unknown, tools: readonly string[]): ToolCall[] | undefined {
  const list = Array.isArray(value) ? value : [value];
  const calls: ToolCall[] = [];
  for (const v of list) {
    if (!v || typeof v !== 'object') return undefined;
    const o = v as Record<string, unknown>;
    const fn = (o.function && typeof o.function === 'object' ? o.function : o) as Record<string, unknown>;
    if (typeof fn.name !== 'string' || !tools.includes(fn.name)) return undefined;
    let args = fn.arguments ?? fn.parameters ?? {};
    if (typeof args === 'string') {
      try {
        args = JSON.parse(args);
      } catch {
        args = { _invalid: args };
      }
    }
    if (!args || typeof args !== 'object' || Array.isArray(args)) args = { _invalid: JSON.stringify(args) };
    calls.push({ id: `text_call_${calls.length + 1}`, name: fn.name, arguments: args as Record<string, unknown> });
  }
  return calls.length ? calls : undefined;
}

/** The tool calls or the answer a text reply holds; tools are the names the model was offered. */
export function readTextReply(text: string, tools: readonly string[], schema: AnswerSchema | undefined): TextReading {
  const candidates = jsonCandidates(text);
  for (const c of candidates) {
    const calls = 'value' in c ? asCalls(c.value, tools) : undefined;
    if (calls) return { kind: 'calls', calls };
  }
  if (!schema) return { kind: 'none' };
  let why: string | undefined;
  for (const c of candidates) {
    if (!('value' in c)) {
      why ??= `it is not valid JSON (${c.error})`;
      continue;
    }
    // {"answer": …}, as the finish tool takes it, is the answer too.
    const tries = c.value && typeof c.value === 'object' && 'answer' in c.value ? [c.value, (c.value as { answer: unknown }).answer] : [c.value];
    for (const t of tries) {
      const wrong = schema.check(t);
      if (!wrong) return { kind: 'answer', answer: t };
      why ??= wrong;
    }
  }
  return why ? { kind: 'wrong-answer', why } : { kind: 'none' };
}
