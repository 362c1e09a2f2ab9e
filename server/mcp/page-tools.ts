// The page tools: Playwright MCP's tool set (the hosted vendor's names for them), driving
// the MCP session's current browser session through Playwright. Elements are named by the
// refs of the page's aria snapshot (anchor_snapshot), resolved by `aria-ref=` locators.
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
const ACTION_TIMEOUT_MS = 5_000;
const NAVIGATION_TIMEOUT_MS = 30_000;

const sessionId = z.string().optional().describe('Browser session to act on; default: the current one (started on first use)');
const ref = z.string().min(1).describe('Element ref from the page snapshot, e.g. e12');
const element = z.string().optional().describe('Human-readable description of the element, for the record');

export function registerPageTools(server: McpServer, scope: PageScope): void {
  /**
   * Runs an action on the current page; a dialog it opens ends the wait and is reported.
   * With the call's extra, long actions report progress when the client asked for it.
   */
  const act = (id: string | undefined, fn: (page: Page, driver: Driver, progress: Progress) => Promise<string>, extra?: ToolExtra) =>
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
    });
  const locate = (page: Page, r: string): Locator => locateRef(page, r);
  const tool = (
    name: string,
    description: string,
    inputSchema: z.ZodRawShape,
    handler: (args: any, extra: ToolExtra) => Promise<CallToolResult>,
    readOnly = false,
  ) => server.registerTool(name, { description, inputSchema, annotations: { readOnlyHint: readOnly } }, handler);

  tool(
    'anchor_navigate',
    'Navigate the current tab to a URL and wait for it to load',
    { url: z.string().url().describe('http(s) URL'), session_id: sessionId },
    (a, extra) =>
      run(async () => {
        await scope.checkUrl(a.url);
        return act(
          a.session_id,
          async (page, _driver, progress) => {
            const res = await loading(page, progress, `Loading ${a.url}`, () => page.goto(a.url, { timeout: NAVIGATION_TIMEOUT_MS }));
            return `Navigated (HTTP ${res?.status() ?? 'no response'}).\n${await where(page)}\nCall anchor_snapshot to see the page and get element refs.`;
          },
          extra,
        );
      }),
  );
  tool('anchor_navigate_back', 'Go back to the previous page in the current tab', { session_id: sessionId }, (a, extra) =>
    act(
      a.session_id,
      async (page, _driver, progress) => {
        await loading(page, progress, 'Going back', () => page.goBack({ timeout: NAVIGATION_TIMEOUT_MS }));
        return `Went back.\n${await where(page)}`;
      },
      extra,
    ),
  );
  tool('anchor_navigate_forward', 'Go forward to the next page in the current tab', { session_id: sessionId }, (a, extra) =>
    act(
      a.session_id,
      async (page, _driver, progress) => {
        await loading(page, progress, 'Going forward', () => page.goForward({ timeout: NAVIGATION_TIMEOUT_MS }));
        return `Went forward.\n${await where(page)}`;
      },
      extra,
    ),
  );
  tool(
    'anchor_snapshot',
    "The current tab's accessibility snapshot (Playwright's aria snapshot): roles, names and states of the page's elements, each actionable element with a ref ([ref=eN]) that the element tools take. Better than a screenshot for acting on a page.",
    { session_id: sessionId },
    (a) => act(a.session_id, snapshotText),
    true,
  );
  tool(
    'anchor_click',
    'Click an element of the page, by its ref from anchor_snapshot',
    {
      element,
      ref,
      double_click: z.boolean().optional().describe('Double-click instead of a single click'),
      button: z.enum(['left', 'right', 'middle']).optional().describe('Mouse button, default left'),
      modifiers: z
        .array(z.enum(['Alt', 'Control', 'ControlOrMeta', 'Meta', 'Shift']))
        .optional()
        .describe('Modifier keys held during the click'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        const options = { button: a.button, modifiers: a.modifiers, timeout: ACTION_TIMEOUT_MS };
        if (a.double_click) await locate(page, a.ref).dblclick(options);
        else await locate(page, a.ref).click(options);
        return `Clicked ${a.element ?? a.ref}.\n${await where(page)}`;
      }),
  );
  tool('anchor_hover', 'Hover the mouse over an element, by its ref', { element, ref, session_id: sessionId }, (a) =>
    act(a.session_id, async (page) => {
      await locate(page, a.ref).hover({ timeout: ACTION_TIMEOUT_MS });
      return `Hovered ${a.element ?? a.ref}.`;
    }),
  );
  tool(
    'anchor_drag',
    'Drag one element onto another, by their refs',
    {
      start_element: z.string().optional().describe('Description of the element to drag'),
      start_ref: ref,
      end_element: z.string().optional().describe('Description of the drop target'),
      end_ref: ref,
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        await locate(page, a.start_ref).dragTo(locate(page, a.end_ref), { timeout: ACTION_TIMEOUT_MS });
        return `Dragged ${a.start_element ?? a.start_ref} to ${a.end_element ?? a.end_ref}.`;
      }),
  );
  tool(
    'anchor_select_option',
    'Select options of a <select> (or listbox), by its ref',
    {
      element,
      ref,
      values: z.array(z.string()).min(1).describe('Values or labels of the options to select'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        const selected = await locate(page, a.ref).selectOption(a.values, { timeout: ACTION_TIMEOUT_MS });
        return `Selected ${JSON.stringify(selected)} in ${a.element ?? a.ref}.`;
      }),
  );
  tool(
    'browser_type',
    'Type text into an editable element (replacing its content), by its ref',
    {
      element,
      ref,
      text: z.string().describe('Text to type'),
      submit: z.boolean().optional().describe('Press Enter afterwards'),
      slowly: z.boolean().optional().describe('Type one character at a time (for pages that react to each key); default: fill at once'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        const target = locate(page, a.ref);
        if (a.slowly) await target.pressSequentially(a.text, { timeout: ACTION_TIMEOUT_MS });
        else await target.fill(a.text, { timeout: ACTION_TIMEOUT_MS });
        if (a.submit) await target.press('Enter', { timeout: ACTION_TIMEOUT_MS });
        return `Typed into ${a.element ?? a.ref}${a.submit ? ' and pressed Enter' : ''}.\n${await where(page)}`;
      }),
  );
  tool(
    'anchor_press_key',
    'Press a key on the keyboard in the current tab',
    {
      key: z.string().min(1).describe('Key name, e.g. ArrowLeft, Enter, a, Control+a'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        await page.keyboard.press(a.key);
        return `Pressed ${a.key}.`;
      }),
  );
  tool(
    'anchor_scroll',
    'Scroll the page (mouse wheel at the viewport, or an element into view)',
    {
      delta_x: z.number().optional().describe('Pixels to scroll right (negative: left)'),
      delta_y: z.number().optional().describe('Pixels to scroll down (negative: up)'),
      element,
      ref: ref.optional().describe('Scroll this element into view instead'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        if (a.ref) await locate(page, a.ref).scrollIntoViewIfNeeded({ timeout: ACTION_TIMEOUT_MS });
        else {
          if (a.delta_x === undefined && a.delta_y === undefined)
            throw new ToolFailure('Give delta_x or delta_y (pixels), or the ref of an element to scroll into view');
          await page.mouse.wheel(a.delta_x ?? 0, a.delta_y ?? 0);
        }
        const pos = await page.evaluate('({x: scrollX, y: scrollY})').catch(() => undefined);
        return `Scrolled.${pos ? ` Scroll position: ${JSON.stringify(pos)}` : ''}`;
      }),
  );
  tool(
    'browser_evaluate',
    'Run a JavaScript function in the page (or on an element) and answer its result as JSON',
    {
      function: z.string().min(1).describe('A function, e.g. "() => document.title" or "(element) => element.textContent" with a ref'),
      element,
      ref: ref.optional().describe('Element passed to the function'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        const result = a.ref
          ? await locate(page, a.ref).evaluate((el, src) => (0, eval)(`(${src})`)(el), a.function, { timeout: ACTION_TIMEOUT_MS })
          : await page.evaluate(`(${a.function})()`);
        return `Result:\n${JSON.stringify(result, null, 2) ?? 'undefined'}`;
      }),
  );
  tool(
    'anchor_wait_for',
    'Wait for text to appear or disappear, or for a number of seconds',
    {
      text: z.string().optional().describe('Text to wait for'),
      text_gone: z.string().optional().describe('Text to wait to disappear'),
      time: z.number().min(0).max(60).optional().describe('Seconds to wait'),
      session_id: sessionId,
    },
    (a, extra) =>
      act(
        a.session_id,
        async (page, _driver, progress) => {
          if (a.text === undefined && a.text_gone === undefined && a.time === undefined) throw new ToolFailure('Give text, text_gone or time');
          if (a.time !== undefined) {
            progress(`Waiting ${a.time} s`);
            await page.waitForTimeout(a.time * 1000);
          }
          if (a.text_gone !== undefined) {
            progress(`Waiting for "${a.text_gone}" to disappear`);
            await page.getByText(a.text_gone).first().waitFor({ state: 'hidden', timeout: 30_000 });
          }
          if (a.text !== undefined) {
            progress(`Waiting for "${a.text}" to appear`);
            await page.getByText(a.text).first().waitFor({ state: 'visible', timeout: 30_000 });
          }
          return 'Done waiting.';
        },
        extra,
      ),
  );
  tool(
    'anchor_handle_dialog',
    'Answer the JavaScript dialog (alert, confirm, prompt) the page has open',
    {
      accept: z.boolean().describe('Accept (OK) or dismiss (Cancel)'),
      prompt_text: z.string().optional().describe('Text to answer a prompt with'),
      session_id: sessionId,
    },
    (a) =>
      run(async () => {
        const { driver } = await scope.target(a.session_id);
        const dialog = driver.dialog;
        if (!dialog) throw new ToolFailure('No dialog is open');
        driver.dialog = undefined;
        if (a.accept) await dialog.accept(a.prompt_text);
        else await dialog.dismiss();
        return text(`${a.accept ? 'Accepted' : 'Dismissed'} the ${dialog.type()} "${dialog.message()}".`);
      }),
  );
  tool(
    'anchor_file_upload',
    "Set the files of a file input (by its ref); the files' content is sent with the call",
    {
      element,
      ref,
      files: z
        .array(z.object({ name: z.string().min(1), mime_type: z.string().optional(), content_base64: z.string().describe('File content, base64') }))
        .max(20)
        .describe('Files to give the input; empty clears it'),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        const files = (a.files as { name: string; mime_type?: string; content_base64: string }[]).map((f) => ({
          name: f.name,
          mimeType: f.mime_type ?? 'application/octet-stream',
          buffer: Buffer.from(f.content_base64, 'base64'),
        }));
        await locate(page, a.ref).setInputFiles(files, { timeout: ACTION_TIMEOUT_MS });
        return `Set ${files.length} file${files.length === 1 ? '' : 's'} on ${a.element ?? a.ref}.`;
      }),
  );
  tool(
    'anchor_console_messages',
    "The current tab's recent console messages",
    { session_id: sessionId },
    (a) =>
      act(a.session_id, async (page) => {
        const messages = await page.consoleMessages();
        if (messages.length === 0) return 'No console messages.';
        return messages.map((m) => `[${m.type()}] ${m.text()}`).join('\n');
      }),
    true,
  );
  tool(
    'anchor_network_requests',
    "The current tab's recent network requests, with their answers' status",
    { session_id: sessionId },
    (a) =>
      act(a.session_id, async (page) => {
        const requests = await page.requests();
        if (requests.length === 0) return 'No requests.';
        return requests
          .map((r) => {
            const res = r.existingResponse();
            const failed = r.failure();
            return `[${r.method()}] ${r.url()} => ${res ? res.status() : failed ? `failed: ${failed.errorText}` : 'pending'}`;
          })
          .join('\n');
      }),
    true,
  );
  tool(
    'anchor_resize',
    "Resize the current tab's viewport",
    {
      width: z.number().int().min(100).max(7680),
      height: z.number().int().min(100).max(4320),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        await page.setViewportSize({ width: a.width, height: a.height });
        return `Viewport is ${a.width}x${a.height}.`;
      }),
  );
  tool('anchor_close', 'Close the browser: end the current browser session', {}, () =>
    run(async () => {
      const id = await scope.endCurrent();
      return text(id ? `Ended browser session ${id}.` : 'No browser session was open.');
    }),
  );
  tool(
    'anchor_tab_list',
    'List the browser tabs',
    { session_id: sessionId },
    (a) =>
      run(async () => {
        const { driver } = await scope.target(a.session_id);
        const current = await driver.page();
        return text(await tabList(driver, current));
      }),
    true,
  );
  tool('anchor_tab_new', 'Open a new tab (optionally at a URL) and make it current', { url: z.string().url().optional(), session_id: sessionId }, (a, extra) =>
    run(async () => {
      if (a.url) await scope.checkUrl(a.url);
      const { driver } = await scope.target(a.session_id);
      const page = await driver.context.newPage();
      driver.select(page);
      if (a.url)
        await withProgress(extra, (progress) => loading(page, progress, `Loading ${a.url}`, () => page.goto(a.url, { timeout: NAVIGATION_TIMEOUT_MS })));
      return text(await tabList(driver, page));
    }),
  );
  tool('anchor_tab_select', 'Make a tab current, by its index in anchor_tab_list', { index: z.number().int().min(0), session_id: sessionId }, (a) =>
    run(async () => {
      const { driver } = await scope.target(a.session_id);
      const page = driver.pages()[a.index];
      if (!page) throw new ToolFailure(`No tab ${a.index}: the browser has ${driver.pages().length}`);
      driver.select(page);
      await page.bringToFront();
      return text(await tabList(driver, page));
    }),
  );
  tool('anchor_tab_close', 'Close a tab, by index (default: the current one)', { index: z.number().int().min(0).optional(), session_id: sessionId }, (a) =>
    run(async () => {
      const { driver } = await scope.target(a.session_id);
      const page = a.index === undefined ? await driver.page() : driver.pages()[a.index];
      if (!page) throw new ToolFailure(`No tab ${a.index}: the browser has ${driver.pages().length}`);
      await page.close();
      const left = driver.pages();
      return text(left.length ? await tabList(driver, await driver.page()) : 'Closed the last tab.');
    }),
  );
  tool(
    'anchor_take_screenshot',
    'A screenshot of the current tab (or of one element). To act on the page use anchor_snapshot: screenshots give no refs',
    {
      type: z.enum(['png', 'jpeg']).optional().describe('Image format, default png'),
      full_page: z.boolean().optional().describe('The whole scrollable page instead of the viewport'),
      element,
      ref: ref.optional().describe('Screenshot only this element'),
      session_id: sessionId,
    },
    (a) =>
      run(async () => {
        const { driver } = await scope.target(a.session_id, 'screenshot');
        const page = await driver.page();
        const type: 'png' | 'jpeg' = a.type ?? 'png';
        const options = { type, timeout: 15_000, ...(type === 'jpeg' ? { quality: 80 } : {}) };
        const image = a.ref ? await locate(page, a.ref).screenshot(options) : await page.screenshot({ ...options, fullPage: a.full_page ?? false });
        return { content: [{ type: 'image', data: image.toString('base64'), mimeType: `image/${type}` }] };
      }),
    true,
  );
  tool(
    'anchor_pdf_save',
    'Save the current tab as a PDF (headless browser sessions only)',
    { session_id: sessionId },
    (a, extra) =>
      run(async () => {
        const { session, driver } = await scope.target(a.session_id);
        const page = await driver.page();
        let pdf: Buffer;
        try {
          pdf = await withProgress(extra, (progress) => {
            progress(`Printing ${page.url()} to PDF`);
            return page.pdf();
          });
        } catch (err) {
          if (/PrintToPDF is not implemented|not supported|headless/i.test((err as Error).message)) {
            throw new ToolFailure(
              'Chromium prints PDFs only in headless sessions: start one with session_start {"headless": true}, or use pdf_webpage for a public URL',
            );
          }
          throw err;
        }
        return {
          content: [
            { type: 'text', text: `PDF of ${page.url()} (${pdf.length} bytes).` },
            { type: 'resource', resource: { uri: `browser-session://${session.id}/page.pdf`, mimeType: 'application/pdf', blob: pdf.toString('base64') } },
          ],
        };
      }),
    true,
  );
  const xy = { x: z.number().describe('X coordinate in CSS pixels'), y: z.number().describe('Y coordinate in CSS pixels') };
  tool('browser_mouse_move_xy', 'Move the mouse to a position of the viewport', { element, ...xy, session_id: sessionId }, (a) =>
    act(a.session_id, async (page) => {
      await page.mouse.move(a.x, a.y);
      return `Moved the mouse to (${a.x}, ${a.y}).`;
    }),
  );
  tool('browser_mouse_click_xy', 'Click at a position of the viewport', { element, ...xy, session_id: sessionId }, (a) =>
    act(a.session_id, async (page) => {
      await page.mouse.click(a.x, a.y);
      return `Clicked at (${a.x}, ${a.y}).\n${await where(page)}`;
    }),
  );
  tool(
    'browser_mouse_drag_xy',
    'Drag the mouse from one position of the viewport to another',
    {
      element,
      start_x: z.number(),
      start_y: z.number(),
      end_x: z.number(),
      end_y: z.number(),
      session_id: sessionId,
    },
    (a) =>
      act(a.session_id, async (page) => {
        await page.mouse.move(a.start_x, a.start_y);
        await page.mouse.down();
        await page.mouse.move(a.end_x, a.end_y, { steps: 10 });
        await page.mouse.up();
        return `Dragged from (${a.start_x}, ${a.start_y}) to (${a.end_x}, ${a.end_y}).`;
      }),
  );
}

const where = async (page: Page) => `Page URL: ${page.url()}\nPage title: ${await title(page)}`;

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
async function title(page: Page): Promise<string> {
  return page.evaluate('document.title').then(
    (t) => (typeof t === 'string' ? t : ''),
    () => '',
  );
}

/** A navigation, reporting its response and its DOM's readiness as they come. */
async function loading<T>(page: Page, progress: Progress, first: string, navigate: () => Promise<T>): Promise<T> {
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

function dialogNotice(driver: Driver): string {
  const d = driver.dialog!;
  return `A ${d.type()} dialog is open: "${d.message()}". Answer it with anchor_handle_dialog before acting on the page.`;
}

async function tabList(driver: Driver, current: Page): Promise<string> {
  const lines = await Promise.all(driver.pages().map(async (p, i) => `${i}: ${p === current ? '(current) ' : ''}[${await title(p)}](${p.url()})`));
  return `Tabs:\n${lines.join('\n')}`;
}
