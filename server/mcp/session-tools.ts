// Browser session tools: start one (the common options of POST /v1/sessions), list the
// project's running ones, end one, and the live-view URL a person can watch or take over with.
import { z } from 'zod';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { SessionCreateBody } from '../sessions/index.js';
import { withProgress } from './progress.js';
import { run, text } from './results.js';

export interface SessionScope {
  start(body: SessionCreateBody): Promise<{ id: string; cdpUrl: string; liveViewUrl: string }>;
  list(): Promise<{ id: string; createdAt: number; current: boolean; startedHere: boolean; liveViewUrl: string }[]>;
  end(id: string): Promise<string>;
  liveViewUrl(id: string | undefined): Promise<{ id: string; url: string }>;
}

const minutes = (what: string) =>
  z
    .number()
    .int()
    .min(-1)
    .refine((n) => n !== 0, 'must not be 0')
    .optional()
    .describe(`${what}, in minutes; -1 for no limit`);

export function registerSessionTools(server: McpServer, scope: SessionScope): void {
  server.registerTool(
    'session_start',
    {
      description:
        'Start a new cloud browser session and make it the current one (the page tools act on it). Without this, the first page tool starts one with the defaults.',
      inputSchema: {
        headless: z.boolean().optional().describe('No visible window (faster; the live view still works). Default false'),
        viewport: z.object({ width: z.number().int().min(320).max(7680), height: z.number().int().min(200).max(4320) }).optional(),
        initial_url: z.string().url().optional().describe('URL the first page opens'),
        recording: z.boolean().optional().describe('Record a video of the session. Default true'),
        proxy: z
          .union([
            z.object({
              type: z.literal('service_proxy'),
              country_code: z
                .string()
                .regex(/^[a-z]{2}$/)
                .optional(),
              region: z.string().min(1).max(100).optional(),
              city: z.string().min(1).max(100).optional(),
            }),
            z.object({ type: z.literal('custom'), server: z.string().url(), username: z.string().optional(), password: z.string().optional() }),
          ])
          .optional()
          .describe("The service's proxy network (by country, region, city) or your own proxy"),
        profile: z
          .object({ name: z.string().min(1).max(128), persist: z.boolean().optional().describe("Save the browser's state back into the profile at the end") })
          .optional()
          .describe('A saved browser profile (cookies, storage) to start from'),
        max_duration: minutes('Longest the session may run (default 20)'),
        idle_timeout: minutes('Inactivity after which the session ends (default 5)'),
        tags: z.array(z.string().min(1).max(256)).max(64).optional(),
      },
    },
    (a, extra) =>
      run(async () => {
        const body: SessionCreateBody = {
          session: {
            ...(a.initial_url ? { initial_url: a.initial_url } : {}),
            ...(a.tags ? { tags: a.tags } : {}),
            ...(a.recording !== undefined ? { recording: { active: a.recording } } : {}),
            ...(a.proxy ? { proxy: { active: true, ...a.proxy } } : {}),
            ...(a.max_duration !== undefined || a.idle_timeout !== undefined
              ? {
                  timeout: {
                    ...(a.max_duration !== undefined ? { max_duration: a.max_duration } : {}),
                    ...(a.idle_timeout !== undefined ? { idle_timeout: a.idle_timeout } : {}),
                  },
                }
              : {}),
          },
          browser: {
            ...(a.headless !== undefined ? { headless: { active: a.headless } } : {}),
            ...(a.viewport ? { viewport: a.viewport } : {}),
            ...(a.profile ? { profile: a.profile } : {}),
          },
        };
        const s = await withProgress(extra, async (progress) => {
          progress('Starting a cloud browser');
          return scope.start(body);
        });
        return text(`Started browser session ${s.id} (now current).\nLive view (watch or take over): ${s.liveViewUrl}\nCDP URL: ${s.cdpUrl}`);
      }),
  );
  server.registerTool(
    'session_list',
    { description: "The project's running browser sessions on this server", inputSchema: {}, annotations: { readOnlyHint: true } },
    () =>
      run(async () => {
        const list = await scope.list();
        if (list.length === 0) return text('No browser session is running.');
        return text(
          list
            .map(
              (s) =>
                `${s.id}${s.current ? ' (current)' : ''}${s.startedHere ? ' (started by this MCP session)' : ''} since ${new Date(s.createdAt).toISOString()}`,
            )
            .join('\n'),
        );
      }),
  );
  server.registerTool(
    'session_end',
    {
      description: 'End a browser session of the project (its browser closes; recordings and profiles are saved)',
      inputSchema: { session_id: z.string().min(1) },
    },
    (a) => run(async () => text(await scope.end(a.session_id))),
  );
  server.registerTool(
    'session_live_view',
    {
      description: 'The live-view URL of a browser session (default: the current one), for a person to watch the browser or take over',
      inputSchema: { session_id: z.string().optional() },
      annotations: { readOnlyHint: true },
    },
    (a) =>
      run(async () => {
        const { id, url } = await scope.liveViewUrl(a.session_id);
        return text(`Live view of browser session ${id}: ${url}`);
      }),
  );
}
