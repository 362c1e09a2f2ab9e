// Task code asked of the language model (self-healing's fix, a generated task): the model
// answers through a tool; code that does not compile is sent back once with the compiler's
// error, since a model usually mends a syntax error it is shown, and a second failure is
// the model's limit, not worth more calls.
import { checkTypeScript } from '../sandbox/index.js';
import type { ChatReply, LanguageModel, Message, ToolSpec } from '../llm/index.js';

export type Refused = { refused: string };

export async function askForCode<T extends { code: string }>(
  model: LanguageModel,
  o: {
    system: string;
    messages: Message[];
    /** The tool the model answers with. */
    tool: ToolSpec;
    /** The answer read from the model's reply, or why there is none. */
    read: (reply: ChatReply) => T | Refused;
    /** The refusal after two answers that do not compile starts with it, e.g. "the proposed code does not parse". */
    failedTwice: string;
  },
  signal: AbortSignal,
): Promise<T | Refused> {
  const messages = [...o.messages];
  for (let attempt = 0; ; attempt++) {
    const reply = await model.chat({ system: o.system, messages, tools: [o.tool], signal });
    const answer = o.read(reply);
    if ('refused' in answer) return answer;
    const parsed = checkTypeScript(answer.code, 'task');
    if (parsed.ok) return answer;
    if (attempt === 1) return { refused: `${o.failedTwice}, twice: ${parsed.message} (line ${parsed.line})` };
    const problem = `The code does not parse: ${parsed.message} (line ${parsed.line}). Call ${o.tool.name} again with code that parses.`;
    messages.push({ role: 'assistant', text: reply.text, toolCalls: reply.toolCalls });
    const answered = reply.toolCalls.find((c) => c.name === o.tool.name);
    for (const c of reply.toolCalls) messages.push({ role: 'tool', callId: c.id, name: c.name, text: c === answered ? problem : 'Ignored.' });
  }
}
