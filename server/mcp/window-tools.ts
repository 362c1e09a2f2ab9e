// The tools on the browser as a whole rather than on an element: its viewport, its tabs,
// images of a tab (screenshot, PDF) and the mouse at a viewport's coordinates.
import { z } from 'zod';
import type { Driver } from './driver.js';
import type { Page } from 'playwright-core';
import { element, loading, NAVIGATION_TIMEOUT_MS, ref, sessionId, title, where, type PageKit } from './page-kit.js';
import { withProgress } from './progress.js';
import { run, text, ToolFailure } from './results.js';

export function registerWindowTools({ tool, act, locate, scope }: PageKit): void {
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

async function tabList(driver: Driver, current: Page): Promise<string> {
  const lines = await Promise.all(driver.pages().map(async (p, i) => `${i}: ${p === current ? '(current) ' : ''}[${await title(p)}](${p.url()})`));
  return `Tabs:\n${lines.join('\n')}`;
}
