// The agent loop of perform-web-task: observe the page (observation.ts), ask the model,
// perform the actions it calls, record each as a step, until it calls finish with an answer
// (checked against the output_schema) or gives up, or the step budget or the time limit
// runs out. A model that writes its calls or its answer as text (text-reply.ts) is read as
// if it had called; one that errs is told what was wrong and retries, within a bound.
import type { Page } from 'playwright-core';
import { InterventionError, type InputType } from '../interventions/index.js';
import { LlmError, type LanguageModel, type Message, type ToolSpec } from '../llm/index.js';
import { actionTools, describeTarget, fileTools, perform, redactSecrets, showStep } from './actions.js';
import type { AgentFile, AgentFileAccess } from './files.js';
import type { AnswerSchema } from './answer-schema.js';
import { firstLine, makeRoom, observe } from './observation.js';
import { readTextReply } from './text-reply.js';
import { BROWSER_ACTIONS, type BrowserAction, type StepRecord } from './steps.js';

export interface WebTaskRun {
  prompt: string;
  model: LanguageModel;
  /** The page the agent works in (a session's tab). */
  page: () => Page;
  answerSchema: AnswerSchema | undefined;
  maxSteps: number;
  /** Ends the run: the time limit, or the server's shutdown. */
  signal: AbortSignal;
  secrets: Record<string, string>;
  /** Where secrets may be typed (a document's URL); unset: anywhere. */
  secretsAllowedOn?(url: string): boolean;
  highlight: boolean;
  checkUrl(url: string): Promise<void>;
  /** Resolves once the agent is not paused (POST .../agent/pause). */
  whilePaused(): Promise<void>;
  /** With human_intervention: asks a person and answers what they said. */
  askHuman?(message: string, inputType: InputType): Promise<string>;
  /** The files the session's agent was given, offered through read_file and upload_file. */
  files: AgentFileAccess;
  /** The model's context in tokens (LLM_CONTEXT_TOKENS): the observation is trimmed to fit; 0 or unset: no limit. */
  contextTokens?: number;
  /** Called after each step, for progress. */
  onStep?(steps: readonly StepRecord[]): void;
}

export type WebTaskOutcome =
  | { ok: true; answer: unknown; steps: StepRecord[]; modelCalls: number; usage: Usage }
  /** kind: the agent's failure (gave up, out of steps or time: 422), or the model's (502). */
  | { ok: false; kind: 'agent' | 'model'; error: string; steps: StepRecord[]; modelCalls: number; usage: Usage };

/** Tokens the model's server counted, over the run's calls, and characters of snapshot shown. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  snapshotChars: number;
}

/**
 * Model turns in a row that perform no action and give no answer (text without a call,
 * malformed calls, unknown tools, refused answers) before the run is failed: each is told
 * what was wrong and may retry, within this bound.
 */
const MAX_IDLE_TURNS = 3;

export class TimeLimit extends Error {}

export async function runWebTask(r: WebTaskRun): Promise<WebTaskOutcome> {
  const steps: StepRecord[] = [];
  const messages: Message[] = [];
  const files = await r.files.list();
  const tools = [...actionTools, ...(files.length ? fileTools : []), finishTool(r.answerSchema), GIVE_UP, ...(r.askHuman ? [ASK_HUMAN] : [])];
  const toolNames = tools.map((t) => t.name);
  let modelCalls = 0;
  const usage: Usage = { inputTokens: 0, outputTokens: 0, snapshotChars: 0 };
  let idle = 0;
  const fail = (kind: 'agent' | 'model', error: string): WebTaskOutcome => ({ ok: false, kind, error, steps, modelCalls, usage });
  const done = (answer: unknown): WebTaskOutcome => ({ ok: true, answer, steps, modelCalls, usage });
  const system = systemPrompt(r, files);
  // Screenshots would show typed secrets, which the model must never see.
  const images = r.model.images && Object.keys(r.secrets).length === 0;
  const contextTokens = r.contextTokens ?? 0;
  try {
    let note = `Task: ${r.prompt}`;
    // Set after an answer that did not conform, in text or through finish: the next turn asks
    // for it in the protocol's structured output mode, which a model without good tool calling
    // answers more reliably than another finish.
    let answerTurn = false;
    for (;;) {
      if (r.signal.aborted) throw r.signal.reason;
      const maxChars = makeRoom(messages, { contextTokens, system, tools });
      await r.whilePaused();
      const seen = await observe(r.page(), { note, images, secrets: r.secrets, used: steps.length, max: r.maxSteps, trimmed: contextTokens > 0, maxChars });
      usage.snapshotChars += seen.snapshotChars;
      messages.push({ role: 'user', content: seen.content });
      modelCalls++;
      const reply = await r.model.chat({ system, messages, tools, signal: r.signal, ...(answerTurn ? { answerSchema: r.answerSchema!.schema } : {}) });
      usage.inputTokens += reply.usage.inputTokens;
      usage.outputTokens += reply.usage.outputTokens;
      answerTurn = false;
      let calls = reply.toolCalls;
      if (calls.length === 0) {
        const read = readTextReply(reply.text, toolNames, r.answerSchema);
        if (read.kind === 'answer') return done(read.answer);
        // Free text is the answer when none is asked for in a shape.
        if (read.kind === 'none' && !r.answerSchema && reply.text.trim()) return done(reply.text.trim());
        if (read.kind === 'calls') {
          // A call written as text: performed as if called, and kept as a call in the
          // conversation so its result has something to answer.
          calls = read.calls.map((c, i) => ({ ...c, id: `text_call_${modelCalls}_${i + 1}` }));
        } else {
          messages.push({ role: 'assistant', text: reply.text, toolCalls: [] });
          if (++idle >= MAX_IDLE_TURNS) return fail('agent', 'The agent gave up: it stopped acting without an answer');
          answerTurn = read.kind === 'wrong-answer';
          note =
            read.kind === 'wrong-answer'
              ? `Your answer does not conform to the JSON Schema: ${read.why}. Give the corrected answer.`
              : 'Call one of the tools: act on the page, finish with the answer, or give_up.';
          continue;
        }
      }
      messages.push({ role: 'assistant', text: calls === reply.toolCalls ? reply.text : '', toolCalls: calls });
      note = '';
      const before = steps.length;
      let refused = false;
      // Refs of a snapshot name elements, not positions: a later call of the same turn
      // acts on its element still, or fails to find it once the page has replaced it.
      for (const call of calls) {
        const answerTool = (text: string) => messages.push({ role: 'tool', callId: call.id, name: call.name, text });
        if ('_invalid' in call.arguments) {
          answerTool(
            `The arguments of ${call.name} were not valid JSON: ${String(call.arguments._invalid).slice(0, 200)}. Call it again with its arguments as one JSON object.`,
          );
          continue;
        }
        if (call.name === 'finish') {
          const answer = call.arguments.answer;
          const wrong = answer === undefined ? 'finish needs an answer' : r.answerSchema?.check(answer);
          if (!wrong) return done(answer);
          answerTool(`The answer was not accepted: ${wrong}. Correct it and call finish again.`);
          refused = r.answerSchema !== undefined;
          continue;
        }
        if (call.name === 'give_up') return fail('agent', `The agent gave up: ${String(call.arguments.reason ?? 'no reason given')}`);
        if (call.name === ASK_HUMAN.name && r.askHuman) {
          answerTool(await askHuman(r, call.arguments));
          continue;
        }
        if (!toolNames.includes(call.name) || !(BROWSER_ACTIONS as readonly string[]).includes(call.name)) {
          answerTool(`There is no tool ${JSON.stringify(call.name).slice(0, 100)}. The tools are: ${toolNames.join(', ')}.`);
          continue;
        }
        if (steps.length >= r.maxSteps) return fail('agent', 'Maximum number of steps exceeded');
        await r.whilePaused();
        const step = await act(steps.length + 1, call.name as BrowserAction, call.arguments, r);
        steps.push(step);
        r.onStep?.(steps);
        answerTool(step.outcome);
      }
      // Turns of wrong answers and unknown tools only: a model going round in circles.
      if (steps.length > before) idle = 0;
      else if (++idle >= MAX_IDLE_TURNS) return fail('agent', 'The agent gave up: three turns in a row without a valid action or answer');
      // A refused answer and nothing done beside it: the correction is asked for as an answer.
      if (refused && steps.length === before) {
        answerTurn = true;
        note = 'Give the corrected answer.';
      }
    }
  } catch (err) {
    if (err instanceof TimeLimit) return fail('agent', err.message);
    if (r.signal.aborted && r.signal.reason instanceof Error) return fail('agent', r.signal.reason.message);
    if (err instanceof LlmError) return fail('model', err.message);
    throw err;
  }
}

async function act(n: number, name: BrowserAction, args: Record<string, unknown>, r: WebTaskRun): Promise<StepRecord> {
  const started = performance.now();
  const target = describeTarget(name, args);
  let outcome: string;
  let ok = true;
  try {
    outcome = await perform(name, args, {
      page: r.page(),
      secrets: r.secrets,
      ...(r.secretsAllowedOn ? { secretsAllowedOn: r.secretsAllowedOn } : {}),
      highlight: r.highlight,
      checkUrl: r.checkUrl,
      files: r.files,
    });
  } catch (err) {
    ok = false;
    outcome = `Failed: ${firstLine(err)}`;
  }
  const step: StepRecord = {
    action: name,
    ...(target !== undefined ? { target } : {}),
    outcome: redactSecrets(outcome, r.secrets),
    ok,
    duration_ms: Math.round(performance.now() - started),
  };
  await showStep(r.page(), `Agent step ${n}: ${name}${step.target ? ` ${redactSecrets(step.target, r.secrets)}` : ''}: ${step.outcome.split('\n')[0]}`);
  return step;
}

const GIVE_UP: ToolSpec = {
  name: 'give_up',
  description: 'Stop: the task cannot be done. Say why.',
  parameters: { type: 'object', properties: { reason: { type: 'string' } }, required: ['reason'], additionalProperties: false },
};

function finishTool(schema: AnswerSchema | undefined): ToolSpec {
  return {
    name: 'finish',
    description: schema ? 'Finish with the answer, which must conform to the given JSON Schema.' : 'Finish with the answer, as text.',
    parameters: { type: 'object', properties: { answer: schema ? schema.schema : { type: 'string' } }, required: ['answer'], additionalProperties: false },
  };
}

/** Most files the model is told of by name; the rest are counted. */
const MAX_LISTED_FILES = 100;

function systemPrompt(r: WebTaskRun, files: AgentFile[]): string {
  const names = Object.keys(r.secrets);
  return [
    'You are a web agent that carries out a task in a web browser, step by step.',
    'Each turn you get the current page: its URL, title and accessibility snapshot, where each element you can act on has a ref like [ref=e12].',
    'Act with the tools (navigate, click, type, select, scroll, wait, extract), naming elements by their ref in the latest snapshot; refs of older snapshots no longer work.',
    `You may take at most ${r.maxSteps} actions.`,
    'When the task is done, call finish with the answer' +
      (r.answerSchema ? ', conforming to this JSON Schema: ' + JSON.stringify(r.answerSchema.schema) : '') +
      '.',
    'If the task cannot be done, call give_up with the reason.',
    ...(names.length ? [`Secrets you may type, by name, written {{name}} in the text of type: ${names.join(', ')}. You never see their values.`] : []),
    ...(files.length
      ? [
          'Files you have (read a text file with read_file, put files into a file input with upload_file): ' +
            files
              .slice(0, MAX_LISTED_FILES)
              .map((f) => `${f.name} (${f.size} bytes)`)
              .join(', ') +
            (files.length > MAX_LISTED_FILES ? `, and ${files.length - MAX_LISTED_FILES} more` : '') +
            '.',
        ]
      : []),
  ].join('\n');
}

const INPUT_TYPES: readonly InputType[] = ['confirm', 'text', 'otp', 'takeover'];

/** With human_intervention: a person watching the session is asked, and the agent waits. */
const ASK_HUMAN: ToolSpec = {
  name: 'ask_human',
  description:
    'Ask a person for help and wait for the answer: confirm (yes/no before an irreversible action), text (information only they have), otp (a one-time code sent to them), or takeover (they act in the browser themselves, e.g. a captcha or a sign-in, then say done). Use it only when the task cannot go on otherwise.',
  parameters: {
    type: 'object',
    properties: {
      message: { type: 'string', description: 'What you need from the person, in one or two sentences.' },
      input_type: { type: 'string', enum: [...INPUT_TYPES] },
    },
    required: ['message', 'input_type'],
    additionalProperties: false,
  },
};

/** The tool result for the model: the answer, or why there is none. */
async function askHuman(r: WebTaskRun, args: Record<string, unknown>): Promise<string> {
  const message = typeof args.message === 'string' ? args.message.trim().slice(0, 2000) : '';
  const inputType = INPUT_TYPES.find((t) => t === args.input_type);
  if (!message || !inputType) return 'ask_human needs a message and an input_type of confirm, text, otp or takeover.';
  try {
    const answer = await r.askHuman!(message, inputType);
    return inputType === 'takeover' ? 'The person took over and is done: look at the page again.' : `The person answered: ${answer}`;
  } catch (err) {
    if (err instanceof InterventionError) return `No answer: ${err.message}. Go on without it, or give_up.`;
    throw err;
  }
}
