// The browser actions the agent's model may call, as tools (JSON Schema), and their effect on
// the page through Playwright. Elements are named by refs of the page's last aria snapshot.
// Secrets are typed by name ({{name}}): the model never sees a value, in what it is told or
// in the record.
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { locateRef } from '../page/aria.js';
import { wheelAndSettle } from '../page/wheel.js';
import type { ToolSpec } from '../llm/index.js';
import type { AgentFileAccess } from './files.js';
import type { BrowserAction } from './steps.js';

/** Longest an element action waits for its element to be actionable. */
const ACTION_TIMEOUT_MS = 5_000;
const NAVIGATION_TIMEOUT_MS = 30_000;
/** Longest one wait action. */
const MAX_WAIT_MS = 10_000;
/** Most characters of text an extract gives back to the model. */
const MAX_EXTRACT_CHARS = 20_000;

const ref = { type: 'string', description: 'The element ref from the page snapshot, e.g. e12' };
const element = { type: 'string', description: 'What the element is, in a few words (for the record)' };
const object = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required, additionalProperties: false });

export const actionTools: ToolSpec[] = [
  {
    name: 'navigate',
    description: 'Load a URL in the current tab.',
    parameters: object({ url: { type: 'string', description: 'An http or https URL' } }, ['url']),
  },
  { name: 'click', description: 'Click an element, by its ref.', parameters: object({ ref, element }, ['ref']) },
  {
    name: 'type',
    description: 'Replace the content of an editable element with text, by its ref. Write a secret as {{name}}.',
    parameters: object({ ref, element, text: { type: 'string' }, submit: { type: 'boolean', description: 'Press Enter afterwards' } }, ['ref', 'text']),
  },
  {
    name: 'select',
    description: 'Select options of a select element (or listbox), by its ref.',
    parameters: object({ ref, element, values: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'Values or labels of the options' } }, [
      'ref',
      'values',
    ]),
  },
  {
    name: 'scroll',
    description: 'Scroll an element into view (with ref), or the page up or down by a screen.',
    parameters: object({ ref, element, direction: { type: 'string', enum: ['up', 'down'] } }, []),
  },
  {
    name: 'wait',
    description: 'Wait for a text to appear on the page, or for a number of seconds (at most 10).',
    parameters: object({ text: { type: 'string' }, seconds: { type: 'number', minimum: 0, maximum: 10 } }, []),
  },
  {
    name: 'extract',
    description: 'Read the visible text of an element (with ref) or of the whole page, to find what the task asks for.',
    parameters: object({ ref, element }, []),
  },
];

/** The actions on the session's agent files, offered when it has some. */
export const fileTools: ToolSpec[] = [
  {
    name: 'read_file',
    description: 'Read a text file of yours (one of the files listed), to use what it says.',
    parameters: object({ file: { type: 'string', description: 'The file name, as listed' } }, ['file']),
  },
  {
    name: 'upload_file',
    description: 'Put files of yours into a file input of the page, by its ref (the input, or the button that opens its file chooser).',
    parameters: object({ ref, element, files: { type: 'array', items: { type: 'string' }, minItems: 1, description: 'File names, as listed' } }, [
      'ref',
      'files',
    ]),
  },
];

export class ActionError extends Error {}

export interface ActionContext {
  page: Page;
  /** Named values the model refers to as {{name}}. */
  secrets: Record<string, string>;
  /** Where secrets may be typed (the field's document URL); unset: anywhere. */
  secretsAllowedOn?(url: string): boolean;
  /** Outline the element acted on, for the live view and the recording. */
  highlight: boolean;
  /** Refuses a URL the server may not load for users. */
  checkUrl(url: string): Promise<void>;
  /** The files the session's agent was given (POST .../agent/files). */
  files: AgentFileAccess;
}

const str = (v: unknown, name: string): string => {
  if (typeof v !== 'string' || v === '') throw new ActionError(`${name} must be a non-empty string`);
  return v;
};

/** The target, as recorded. */
export function describeTarget(name: string, args: Record<string, unknown>): string | undefined {
  if (name === 'navigate') return typeof args.url === 'string' ? args.url : undefined;
  if (name === 'read_file') return typeof args.file === 'string' ? args.file : undefined;
  if (typeof args.ref !== 'string') return typeof args.text === 'string' && name === 'wait' ? `text "${args.text}"` : undefined;
  return typeof args.element === 'string' && args.element ? `${args.ref} (${args.element})` : args.ref;
}

/** Performs one action; answers the outcome for the model. Throws ActionError (or Playwright's) when it fails. */
export async function perform(name: BrowserAction, args: Record<string, unknown>, c: ActionContext): Promise<string> {
  const { page } = c;
  const target = async (): Promise<ReturnType<typeof locateRef>> => {
    const locator = locateRef(page, str(args.ref, 'ref'));
    if (c.highlight) {
      await locator
        .evaluate(
          (el: HTMLElement) => {
            el.style.outline = '3px solid #ff00ff';
            el.style.outlineOffset = '2px';
          },
          undefined,
          { timeout: ACTION_TIMEOUT_MS },
        )
        .catch(() => {});
    }
    return locator;
  };
  switch (name) {
    case 'navigate': {
      const url = str(args.url, 'url');
      await c.checkUrl(url);
      const res = await page.goto(url, { timeout: NAVIGATION_TIMEOUT_MS });
      return `Loaded ${page.url()} (HTTP ${res?.status() ?? 'no response'}).`;
    }
    case 'click':
      await (await target()).click({ timeout: ACTION_TIMEOUT_MS });
      return 'Clicked.';
    case 'type': {
      const text = str(args.text, 'text');
      const field = await target();
      const filled = fillSecrets(text, c.secrets);
      if (c.secretsAllowedOn && SECRET.test(text)) {
        const where = await field.evaluate((el) => el.ownerDocument.location.href, undefined, { timeout: ACTION_TIMEOUT_MS });
        if (!c.secretsAllowedOn(where)) throw new ActionError(`Secrets may not be typed on ${new URL(where).hostname}`);
      }
      await field.fill(filled, { timeout: ACTION_TIMEOUT_MS });
      // The locator's press, unlike the keyboard's, waits for the navigation it starts to commit.
      if (args.submit === true) await field.press('Enter', { timeout: ACTION_TIMEOUT_MS });
      return args.submit === true ? 'Typed and pressed Enter.' : 'Typed.';
    }
    case 'select': {
      const values = Array.isArray(args.values) ? args.values.filter((v): v is string => typeof v === 'string') : [];
      if (!values.length) throw new ActionError('values must list at least one option');
      const selected = await (await target()).selectOption(values, { timeout: ACTION_TIMEOUT_MS });
      return `Selected ${JSON.stringify(selected)}.`;
    }
    case 'scroll':
      if (typeof args.ref === 'string') {
        await (await target()).scrollIntoViewIfNeeded({ timeout: ACTION_TIMEOUT_MS });
        return 'Scrolled the element into view.';
      }
      await wheelAndSettle(page, 0, args.direction === 'up' ? -600 : 600);
      return `Scrolled ${args.direction === 'up' ? 'up' : 'down'}.`;
    case 'wait': {
      if (typeof args.text === 'string' && args.text) {
        await page.getByText(args.text).first().waitFor({ state: 'visible', timeout: MAX_WAIT_MS });
        return `"${args.text}" is on the page.`;
      }
      const seconds = typeof args.seconds === 'number' && args.seconds > 0 ? Math.min(args.seconds, MAX_WAIT_MS / 1000) : 1;
      await page.waitForTimeout(seconds * 1000);
      return `Waited ${seconds} s.`;
    }
    case 'extract': {
      const text =
        typeof args.ref === 'string'
          ? await (await target()).innerText({ timeout: ACTION_TIMEOUT_MS })
          : await page.locator('body').innerText({ timeout: ACTION_TIMEOUT_MS });
      const redacted = redactSecrets(text, c.secrets);
      return redacted.length > MAX_EXTRACT_CHARS ? `${redacted.slice(0, MAX_EXTRACT_CHARS)}\n[… cut at ${MAX_EXTRACT_CHARS} characters]` : redacted;
    }
    case 'read_file': {
      const name = str(args.file, 'file');
      const path = await c.files.path(name);
      if (!path) throw new ActionError(`You have no file named ${name}`);
      const bytes = await readFile(path);
      // A NUL byte in the first 8 kB: not text (the same test git makes).
      if (bytes.subarray(0, 8192).includes(0)) return `${name} is not a text file (${bytes.length} bytes): it can be uploaded, not read.`;
      const text = redactSecrets(bytes.toString('utf8'), c.secrets);
      return text.length > MAX_EXTRACT_CHARS ? `${text.slice(0, MAX_EXTRACT_CHARS)}\n[… cut at ${MAX_EXTRACT_CHARS} characters]` : text;
    }
    case 'upload_file': {
      const names = Array.isArray(args.files) ? args.files.filter((v): v is string => typeof v === 'string') : [];
      if (!names.length) throw new ActionError('files must list at least one file name');
      const paths: string[] = [];
      for (const name of names) {
        const path = await c.files.path(name);
        if (!path) throw new ActionError(`You have no file named ${name}`);
        paths.push(path);
      }
      const field = await target();
      // An <input type=file> takes them directly; a button that opens a file chooser is clicked and the chooser answered.
      const isInput = await field.evaluate((el) => el instanceof HTMLInputElement && el.type === 'file', undefined, { timeout: ACTION_TIMEOUT_MS });
      if (isInput) await field.setInputFiles(paths, { timeout: ACTION_TIMEOUT_MS });
      else {
        const chooser = page.waitForEvent('filechooser', { timeout: ACTION_TIMEOUT_MS });
        await field.click({ timeout: ACTION_TIMEOUT_MS });
        await (await chooser).setFiles(paths);
      }
      return `Uploaded ${names.join(', ')}.`;
    }
  }
}

/** A secret's reference in a text the model wrote: {{name}}. */
const SECRET = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/;

/** {{name}} → the secret's value; an unknown name is an error the model can correct. */
export function fillSecrets(text: string, secrets: Record<string, string>): string {
  return text.replace(new RegExp(SECRET.source, 'g'), (_m, name: string) => {
    if (!Object.hasOwn(secrets, name)) throw new ActionError(`There is no secret named ${name}`);
    return secrets[name];
  });
}

/** Every secret's value in a text the model will read, replaced by its {{name}}: as typed, and as a URL carries it. */
export function redactSecrets(text: string, secrets: Record<string, string>): string {
  let out = text;
  for (const [name, value] of Object.entries(secrets)) {
    if (!value) continue;
    const forms = new Set([value, encodeURIComponent(value), new URLSearchParams({ v: value }).toString().slice(2)]);
    for (const form of forms) out = out.split(form).join(`{{${name}}}`);
  }
  return out;
}

/**
 * Shows the step in the page, bottom left, until the next: the live view and the session's
 * recording show what the agent did. It sits in a closed shadow root, hidden from the
 * accessibility tree (the snapshots), from innerText (extract) and from the mouse.
 */
export async function showStep(page: Page, text: string): Promise<void> {
  await page
    .evaluate(
      (caption: string) => {
        const w = window as unknown as { __agentStep?: HTMLElement };
        let box = w.__agentStep;
        if (!box || !box.isConnected) {
          const host = document.createElement('div');
          host.setAttribute('aria-hidden', 'true');
          host.style.cssText = 'all:initial;position:fixed;left:8px;bottom:8px;z-index:2147483647;pointer-events:none';
          box = document.createElement('div');
          box.style.cssText =
            'max-width:60vw;padding:6px 10px;border-radius:6px;background:rgba(20,20,20,.85);color:#fff;font:13px/1.4 system-ui,sans-serif;white-space:pre-wrap';
          host.attachShadow({ mode: 'closed' }).appendChild(box);
          (document.body ?? document.documentElement).appendChild(host);
          w.__agentStep = box;
        }
        box.textContent = caption;
      },
      text.length > 200 ? `${text.slice(0, 199)}…` : text,
    )
    .catch(() => {});
}
