// What the model is shown of the page each turn, and how the conversation is kept within
// its context. Without a context budget: the full aria snapshot (up to 40,000 characters)
// and a screenshot when the model takes images. With one (LLM_CONTEXT_TOKENS, for small
// local models): the snapshot trimmed to what is in view (snapshot-trim.ts), cut to what
// the budget leaves once the system prompt, the tools and the turns so far are counted,
// and the oldest turns dropped when those alone fill most of it.
import type { Page } from 'playwright-core';
import { ariaSnapshot, missingRef } from '../page/aria.js';
import type { Content, Message, ToolSpec } from '../llm/index.js';
import { ActionError, redactSecrets } from './actions.js';
import { trimSnapshot } from './snapshot-trim.js';

/** Most characters of a full snapshot the model is shown. */
const MAX_SNAPSHOT_CHARS = 40_000;
/**
 * Characters per token when counting against a budget: about 4 in English prose, nearer 3
 * in snapshots (brackets, refs, indentation); the lower figure errs on the safe side.
 */
export const CHARS_PER_TOKEN = 3;
/** Tokens of the context kept free for the model's reply. */
const REPLY_RESERVE_TOKENS = 512;
/** The fewest characters of snapshot shown, whatever the budget: less would show nothing. */
const MIN_SNAPSHOT_CHARS = 1_500;
/** The share of the budget the turns so far may take before the oldest are dropped. */
const HISTORY_SHARE = 0.5;
/** The observation's lines around the snapshot: the note, the steps used, the URL and title. */
const OBSERVATION_FRAME_CHARS = 600;

export const estimateTokens = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);

/** Characters of a message as sent (text only: a budget goes with text-only models). */
function messageChars(m: Message): number {
  if (m.role === 'user') return m.content.reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
  if (m.role === 'tool') return m.text.length + 40;
  return m.text.length + m.toolCalls.reduce((n, c) => n + c.name.length + JSON.stringify(c.arguments).length + 40, 0);
}

export interface Budget {
  /** The model's context, in tokens; 0: none (the full snapshot). */
  contextTokens: number;
  system: string;
  tools: ToolSpec[];
}

/**
 * Before a turn's observation: older snapshots go (they are stale and cost tokens), and
 * with a budget the oldest turns after the task go until the rest fits its share. Answers
 * the characters of snapshot the budget leaves (Infinity without one).
 */
export function makeRoom(messages: Message[], b: Budget): number {
  forgetOldObservations(messages);
  if (!b.contextTokens) return MAX_SNAPSHOT_CHARS;
  const total = b.contextTokens * CHARS_PER_TOKEN;
  const fixed = b.system.length + JSON.stringify(b.tools).length;
  const history = () => messages.reduce((n, m) => n + messageChars(m), 0);
  // A turn is the model's reply, its tool results and the observation after them; the first
  // message (the task) stays.
  while (history() > (total - fixed) * HISTORY_SHARE && messages.length > 2) {
    const next = messages.findIndex((m, i) => i > 1 && m.role === 'assistant');
    messages.splice(1, next === -1 ? messages.length - 1 : next - 1);
  }
  const left = total - fixed - history() - REPLY_RESERVE_TOKENS * CHARS_PER_TOKEN - OBSERVATION_FRAME_CHARS;
  return Math.min(MAX_SNAPSHOT_CHARS, Math.max(MIN_SNAPSHOT_CHARS, left));
}

export interface Observed {
  content: Content[];
  /** Characters of the snapshot shown (after trimming and cutting). */
  snapshotChars: number;
}

export async function observe(
  page: Page,
  o: { note: string; images: boolean; secrets: Record<string, string>; used: number; max: number; trimmed: boolean; maxChars: number },
): Promise<Observed> {
  // An action that started a navigation returns once it commits: the page is read once parsed.
  await page.waitForLoadState('domcontentloaded', { timeout: 10_000 }).catch(() => {});
  let snapshot: string;
  let outOfView = '';
  try {
    if (o.trimmed) {
      const height = page.viewportSize()?.height ?? (await page.evaluate(() => window.innerHeight));
      const t = trimSnapshot(await ariaSnapshot(page, { boxes: true }), height);
      snapshot = t.text;
      if (t.above || t.below) outOfView = `Out of view (scroll to reach them): ${t.above} interactive elements above, ${t.below} below.`;
    } else snapshot = await ariaSnapshot(page);
  } catch (err) {
    snapshot = `(the page could not be read: ${firstLine(err)})`;
  }
  if (snapshot.length > o.maxChars) snapshot = `${snapshot.slice(0, o.maxChars)}\n[… cut]`;
  const title = await page.title().catch(() => '');
  const text = [
    o.note,
    `Steps used: ${o.used} of ${o.max}.`,
    `Page URL: ${page.url()}`,
    `Page title: ${title}`,
    'Page snapshot:',
    '```yaml',
    snapshot,
    '```',
    outOfView,
  ]
    .filter(Boolean)
    .join('\n');
  // The URL holds what a form sent, the snapshot what fields hold: both may show a secret.
  const content: Content[] = [{ type: 'text', text: redactSecrets(text, o.secrets) }];
  if (o.images) {
    const jpeg = await page.screenshot({ type: 'jpeg', quality: 60, timeout: 10_000 }).catch(() => undefined);
    if (jpeg) content.push({ type: 'image', mediaType: 'image/jpeg', data: jpeg.toString('base64') });
  }
  return { content, snapshotChars: snapshot.length };
}

/** Only the latest observation keeps its snapshot and screenshot: older ones are stale and cost tokens. */
function forgetOldObservations(messages: Message[]): void {
  for (const m of messages) {
    if (m.role !== 'user') continue;
    const text = m.content.find((c) => c.type === 'text');
    if (m.content.length === 1 && text?.type === 'text' && !text.text.includes('Page snapshot:')) continue;
    const kept =
      text?.type === 'text' ? text.text.replace(/Page snapshot:\n```yaml\n[\s\S]*?\n```(\nOut of view[^\n]*)?/, 'Page snapshot: (stale, omitted)') : '';
    m.content = [{ type: 'text', text: kept }];
  }
}

/** Playwright's messages carry a call log after the first line: the model needs the first. */
export function firstLine(err: unknown): string {
  if (err instanceof ActionError) return err.message;
  const ref = missingRef(err);
  if (ref) return `Element ref ${ref} is not on the page (it changed since the snapshot): use the refs of the latest snapshot`;
  return String((err as Error)?.message ?? err)
    .split('\n')[0]
    .replace(/^\w+\.\w+: /, '');
}
