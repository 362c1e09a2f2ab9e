// What every page tool is made of: the scope that finds its browser session, the tool
// registration, the action wrapper that reports dialogs and progress, the argument pieces
// they share, and how a page is described (its place, its snapshot, a navigation's progress).
// page-tools.ts and window-tools.ts register the tools themselves.
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Frame, Locator, Page } from 'playwright-core';
import type { RunningSession } from '../capability/index.js';
import { ariaSnapshot, locateRef } from '../page/aria.js';
import type { Driver } from './driver.js';
import { withProgress, type Progress, type ToolExtra } from './progress.js';
import { run, text, ToolFailure } from './results.js';

export interface PageScope {
  /** The browser session a tool acts on (the one named, else the current one, started when there is none) and its driver. */
  target(sessionId: string | undefined, kind?: 'input' | 'screenshot'): Promise<{ session: RunningSession; driver: Driver }>;
  /** Refuses a URL the server may not load for users (private networks unless allowed). */
  checkUrl(url: string): Promise<void>;
  /** Ends the current browser session; its id, or undefined when there was none. */
  endCurrent(): Promise<string | undefined>;
}

/** Longest an element action waits for its element to be actionable. */
export const ACTION_TIMEOUT_MS = 5_000;
export const NAVIGATION_TIMEOUT_MS = 30_000;

export const sessionId = z.string().optional().describe('Browser session to act on; default: the current one (started on first use)');
export const ref = z.string().min(1).describe('Element ref from the page snapshot, e.g. e12');
export const element = z.string().optional().describe('Human-readable description of the element, for the record');

export interface PageKit {
  scope: PageScope;
  /** Registers a tool; `readOnly` tells clients it changes nothing. */
  tool(
    name: string,
    description: string,
    inputSchema: z.ZodRawShape,
    handler: (args: any, extra: ToolExtra) => Promise<CallToolResult>,
    readOnly?: boolean,
  ): void;
  /**
   * Runs an action on the current page; a dialog it opens ends the wait and is reported.
   * With the call's extra, long actions report progress when the client asked for it.
   */
  act(id: string | undefined, fn: (page: Page, driver: Driver, progress: Progress) => Promise<string>, extra?: ToolExtra): Promise<CallToolResult>;
  /** The element a snapshot's ref names. */
  locate(page: Page, r: string): Locator;
}

export function pageKit(server: McpServer, scope: PageScope): PageKit {
  return {
    scope,
    tool: (name, description, inputSchema, handler, readOnly = false) => {
      server.registerTool(name, { description, inputSchema, annotations: { readOnlyHint: readOnly } }, handler);
    },
    act: (id, fn, extra) =>
      run(async () => {
        const { driver } = await scope.target(id);
        if (driver.dialog) throw new ToolFailure(dialogNotice(driver));
        const page = await driver.page();
        const dialog = driver.nextDialog();
        try {
          const done = withProgress(extra, (progress) => fn(page, driver, progress));
          done.catch(() => {});
          const outcome = await Promise.race([done, dialog.promise.then(() => undefined)]);
          if (outcome === undefined) return text(dialogNotice(driver));
          return text(outcome);
        } finally {
          dialog.cancel();
        }
      }),
    locate: (page, r) => locateRef(page, r),
  };
}

export const where = async (page: Page) => `Page URL: ${page.url()}\nPage title: ${await title(page)}`;

/** What anchor_snapshot answers (and the page-snapshot resource holds): where the tab is, and its aria snapshot with refs. */
export async function snapshotText(page: Page): Promise<string> {
  // Side by side: two round trips to the page in the time of one.
  const [place, snapshot] = await Promise.all([where(page), ariaSnapshot(page)]);
  return `${place}\nPage snapshot:\n\`\`\`yaml\n${snapshot}\n\`\`\``;
}

/**
 * The page's title, read in its main world: page.title() reads it in Playwright's utility
 * world, which a new document has yet to create (one more CDP round trip and a context):
 * 5 to 20 ms after each navigation, measured by bench/mcp.
 */
export async function title(page: Page): Promise<string> {
  return page.evaluate('document.title').then(
    (t) => (typeof t === 'string' ? t : ''),
    () => '',
  );
}

/** A navigation, reporting its response and its DOM's readiness as they come. */
export async function loading<T>(page: Page, progress: Progress, first: string, navigate: () => Promise<T>): Promise<T> {
  progress(first);
  const committed = (frame: Frame) => {
    if (frame === page.mainFrame()) progress(`Response received from ${frame.url()}; loading the page`);
  };
  const ready = () => progress('Document parsed; waiting for the load event');
  page.on('framenavigated', committed);
  page.on('domcontentloaded', ready);
  try {
    return await navigate();
  } finally {
    page.off('framenavigated', committed);
    page.off('domcontentloaded', ready);
  }
}

export function dialogNotice(driver: Driver): string {
  const d = driver.dialog!;
  return `A ${d.type()} dialog is open: "${d.message()}". Answer it with anchor_handle_dialog before acting on the page.`;
}
