// The agent loop of perform-web-task: observe the page (its aria snapshot with element refs,
// and a screenshot when the model takes images), ask the model, perform the actions it
// calls, record each as a step, until it calls finish with an answer (checked against the
// output_schema) or gives up, or the step budget or the time limit runs out.
import type { Page } from 'playwright-core';
import { InterventionError, type InputType } from '../interventions/index.js';
import { ariaSnapshot, missingRef } from '../page/aria.js';
import { LlmError, type Content, type LanguageModel, type Message, type ToolSpec } from '../llm/index.js';
import { ActionError, actionTools, describeTarget, fileTools, perform, redactSecrets, showStep } from './actions.js';
import type { AgentFile, AgentFileAccess } from './files.js';
import type { AnswerSchema } from './answer-schema.js';
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
  highlight: boolean;
  checkUrl(url: string): Promise<void>;
  /** Resolves once the agent is not paused (POST .../agent/pause). */
  whilePaused(): Promise<void>;
  /** With human_intervention: asks a person and answers what they said. */
  askHuman?(message: string, inputType: InputType): Promise<string>;
  /** The files the session's agent was given, offered through read_file and upload_file. */
  files: AgentFileAccess;
  /** Called after each step, for progress. */
  onStep?(steps: readonly StepRecord[]): void;
}

export type WebTaskOutcome =
  | { ok: true; answer: unknown; steps: StepRecord[]; modelCalls: number }
  /** kind: the agent's failure (gave up, out of steps or time: 422), or the model's (502). */
  | { ok: false; kind: 'agent' | 'model'; error: string; steps: StepRecord[]; modelCalls: number };

/** Model turns in a row that perform no action before the run is failed. */
const MAX_IDLE_TURNS = 3;
/** Most characters of a snapshot the model is shown. */
const MAX_SNAPSHOT_CHARS = 40_000;

export class TimeLimit extends Error {}

export async function runWebTask(r: WebTaskRun): Promise<WebTaskOutcome> {
  const steps: StepRecord[] = [];
  const messages: Message[] = [];
  const files = await r.files.list();
  const tools = [...actionTools, ...(files.length ? fileTools : []), finishTool(r.answerSchema), GIVE_UP, ...(r.askHuman ? [ASK_HUMAN] : [])];
  let modelCalls = 0;
  let idle = 0;
  const fail = (kind: 'agent' | 'model', error: string): WebTaskOutcome => ({ ok: false, kind, error, steps, modelCalls });
  const system = systemPrompt(r, files);
  // Screenshots would show typed secrets, which the model must never see.
  const images = r.model.images && Object.keys(r.secrets).length === 0;
  try {
    let note = `Task: ${r.prompt}`;
    for (;;) {
      if (r.signal.aborted) throw r.signal.reason;
      forgetOldObservations(messages);
      await r.whilePaused();
      messages.push({ role: 'user', content: await observe(r.page(), note, images, r.secrets, steps.length, r.maxSteps) });
      modelCalls++;
      const reply = await r.model.chat({ system, messages, tools, signal: r.signal });
      messages.push({ role: 'assistant', text: reply.text, toolCalls: reply.toolCalls });
      if (reply.toolCalls.length === 0) {
        // Free text is the answer when none is asked for in a shape.
        if (!r.answerSchema && reply.text.trim()) return { ok: true, answer: reply.text.trim(), steps, modelCalls };
        if (++idle >= MAX_IDLE_TURNS) return fail('agent', 'The agent gave up: it stopped acting without an answer');
        note = 'Call one of the tools: act on the page, finish with the answer, or give_up.';
        continue;
      }
      note = '';
      const before = steps.length;
      // Refs of a snapshot name elements, not positions: a later call of the same turn
      // acts on its element still, or fails to find it once the page has replaced it.
      for (const call of reply.toolCalls) {
        const answerTool = (text: string) => messages.push({ role: 'tool', callId: call.id, name: call.name, text });
        if (call.name === 'finish') {
          const answer = call.arguments.answer;
          const wrong = answer === undefined ? 'finish needs an answer' : r.answerSchema?.check(answer);
          if (!wrong) return { ok: true, answer, steps, modelCalls };
          answerTool(`The answer was not accepted: ${wrong}. Correct it and call finish again.`);
          continue;
        }
        if (call.name === 'give_up') return fail('agent', `The agent gave up: ${String(call.arguments.reason ?? 'no reason given')}`);
        if (call.name === ASK_HUMAN.name && r.askHuman) {
          answerTool(await askHuman(r, call.arguments));
          continue;
        }
        if (!(BROWSER_ACTIONS as readonly string[]).includes(call.name)) {
          answerTool(`There is no tool ${call.name}.`);
          continue;
        }
        if (steps.length >= r.maxSteps) return fail('agent', 'Maximum number of steps exceeded');
        if ('_invalid' in call.arguments) {
          answerTool('The arguments were not valid JSON.');
          continue;
        }
        await r.whilePaused();
        const step = await act(steps.length + 1, call.name as BrowserAction, call.arguments, r);
        steps.push(step);
        r.onStep?.(steps);
        answerTool(step.outcome);
      }
      // Turns of wrong answers and unknown tools only: a model going round in circles.
      if (steps.length > before) idle = 0;
      else if (++idle >= MAX_IDLE_TURNS) return fail('agent', 'The agent gave up: three turns in a row without a valid action or answer');
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
    outcome = await perform(name, args, { page: r.page(), secrets: r.secrets, highlight: r.highlight, checkUrl: r.checkUrl, files: r.files });
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

/** Playwright's messages carry a call log after the first line: the model needs the first. */
function firstLine(err: unknown): string {
  if (err instanceof ActionError) return err.message;
  const ref = missingRef(err);
  if (ref) return `Element ref ${ref} is not on the page (it changed since the snapshot): use the refs of the latest snapshot`;
  return String((err as Error)?.message ?? err)
    .split('\n')[0]
    .replace(/^\w+\.\w+: /, '');
}

async function observe(page: Page, note: string, images: boolean, secrets: Record<string, string>, used: number, max: number): Promise<Content[]> {
  // An action that started a navigation returns once it commits: the page is read once parsed.
  await page.waitForLoadState('domcontentloaded', { timeout: 10_000 }).catch(() => {});
  let snapshot: string;
  try {
    snapshot = await ariaSnapshot(page);
  } catch (err) {
    snapshot = `(the page could not be read: ${firstLine(err)})`;
  }
  if (snapshot.length > MAX_SNAPSHOT_CHARS) snapshot = `${snapshot.slice(0, MAX_SNAPSHOT_CHARS)}\n[… cut]`;
  const title = await page.title().catch(() => '');
  const text = [note, `Steps used: ${used} of ${max}.`, `Page URL: ${page.url()}`, `Page title: ${title}`, 'Page snapshot:', '```yaml', snapshot, '```']
    .filter(Boolean)
    .join('\n');
  // The URL holds what a form sent, the snapshot what fields hold: both may show a secret.
  const content: Content[] = [{ type: 'text', text: redactSecrets(text, secrets) }];
  if (images) {
    const jpeg = await page.screenshot({ type: 'jpeg', quality: 60, timeout: 10_000 }).catch(() => undefined);
    if (jpeg) content.push({ type: 'image', mediaType: 'image/jpeg', data: jpeg.toString('base64') });
  }
  return content;
}

/** Only the latest observation keeps its snapshot and screenshot: older ones are stale and cost tokens. */
function forgetOldObservations(messages: Message[]): void {
  for (const m of messages) {
    if (m.role !== 'user') continue;
    const text = m.content.find((c) => c.type === 'text');
    if (m.content.length === 1 && text?.type === 'text' && !text.text.includes('Page snapshot:')) continue;
    const kept = text?.type === 'text' ? text.text.replace(/Page snapshot:\n```yaml\n[\s\S]*?\n```/, 'Page snapshot: (stale, omitted)') : '';
    m.content = [{ type: 'text', text: kept }];
  }
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
