// A task's code written by the language model from what the user asked (user_task) and the
// task's inputs and outputs: the model answers through the tool write_task, and code that
// does not compile goes back to it once with the compiler's error (model-code.ts).
import type { LanguageModel, Message, ToolSpec } from '../llm/index.js';
import { askForCode, type Refused } from './model-code.js';
import type { GenerationAsk } from './generation-store.js';

export const WRITE_TASK: ToolSpec = {
  name: 'write_task',
  description: 'Give the complete TypeScript source of the task.',
  parameters: {
    type: 'object',
    additionalProperties: false,
    required: ['code'],
    properties: {
      code: { type: 'string', description: 'The complete TypeScript source: export default async function run(ctx) { ... }' },
    },
  },
};

const SYSTEM = `You write browser automation tasks in TypeScript.
A task is a TypeScript module exporting \`export default async function run(ctx)\`, where ctx.page is a Playwright Page
already open in the run's browser (ctx.context and ctx.browser too), ctx.input holds the run's input parameters (every
value a string, keyed by the parameter's name), ctx.artifacts.save(name, data, contentType) keeps a file, and ctx.log(...)
writes to the run's log. The function's return value is the run's output: return a plain object whose keys are the
output parameters' names. Throw an Error with a clear message when the task cannot be done (a required input missing,
an element not found). The module runs in a sandbox: import nothing, use no file system, no network but the page.
Prefer robust selectors: roles and accessible names (page.getByRole('button', { name: '...' })), labels, visible text.
Answer only by calling the tool write_task with the complete source.`;

type Parameter = NonNullable<GenerationAsk['input_schema']>[number];

function describeParameter(p: Parameter): string {
  return [
    `- "${p.display_name}" (${p.type}${p.required ? ', required' : ''})`,
    p.description ? `: ${p.description}` : '',
    p.default_value !== undefined ? `; default ${JSON.stringify(p.default_value)}` : '',
  ].join('');
}

/** What the model is told: the task, then its inputs (with their defaults) and outputs. */
export function taskPrompt(ask: GenerationAsk): string {
  const inputs = ask.input_schema ?? [];
  const outputs = ask.output_schema ?? [];
  return [
    'The task to write:',
    ask.user_task,
    '',
    inputs.length
      ? 'Input parameters, in ctx.input by these names (strings; when one is absent, use its default, and throw if a required one has none):'
      : 'The task has no input parameters.',
    ...inputs.map(describeParameter),
    '',
    outputs.length ? 'Output: return an object with these keys:' : 'Output: return an object describing the result.',
    ...outputs.map(describeParameter),
  ].join('\n');
}

export async function writeTaskCode(model: LanguageModel, ask: GenerationAsk, signal: AbortSignal): Promise<{ code: string } | Refused> {
  const messages: Message[] = [{ role: 'user', content: [{ type: 'text', text: taskPrompt(ask) }] }];
  return askForCode(
    model,
    {
      system: SYSTEM,
      messages,
      tool: WRITE_TASK,
      read: (reply) => {
        const call = reply.toolCalls.find((c) => c.name === WRITE_TASK.name);
        const code = call?.arguments.code;
        if (typeof code === 'string' && code.trim() !== '') return { code };
        return { refused: call ? 'the model called write_task without code' : 'the model did not call write_task' };
      },
      failedTwice: 'the generated code does not compile',
    },
    signal,
  );
}
