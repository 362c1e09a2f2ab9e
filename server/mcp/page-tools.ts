// The page tools: Playwright MCP's tool set (the hosted vendor's names for them), driving
// the MCP session's current browser session through Playwright. Elements are named by the
// refs of the page's aria snapshot (anchor_snapshot), resolved by `aria-ref=` locators.
// Its pieces are in page-kit.ts; the tools on tabs, images and coordinates in window-tools.ts.
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { wheelAndSettle } from '../page/wheel.js';
import { ACTION_TIMEOUT_MS, element, loading, NAVIGATION_TIMEOUT_MS, pageKit, ref, sessionId, snapshotText, where, type PageScope } from './page-kit.js';
import { run, text, ToolFailure } from './results.js';
import { registerWindowTools } from './window-tools.js';

export function registerPageTools(server: McpServer, scope: PageScope): void {
  const kit = pageKit(server, scope);
  const { tool, act, locate } = kit;
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
          await wheelAndSettle(page, a.delta_x ?? 0, a.delta_y ?? 0);
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
  registerWindowTools(kit);
}
