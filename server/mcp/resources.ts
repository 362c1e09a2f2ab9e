// Resources: what a client may read about a browser session without a tool call, each
// listed by resources/list for the project's running sessions (and, for recordings, the
// ended ones this MCP session started): the current tab's aria snapshot and screenshot, the
// live-view URL, and the session's recordings with their download links. The list changes
// as sessions start and end; the MCP session then sends notifications/resources/list_changed.
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpError, type ReadResourceResult, type Resource } from '@modelcontextprotocol/sdk/types.js';
import type { RunningSession } from '../capability/index.js';
import type { Driver } from './driver.js';
import { snapshotText } from './page-kit.js';
import { ToolFailure } from './results.js';

export interface ResourceScope {
  /** The project's running browser sessions, then the ended ones this MCP session started. */
  sessions(): { running: string[]; ended: string[] };
  /** A running browser session of the project and its driver; the current session stays as it is. */
  open(sessionId: string, kind: 'input' | 'screenshot'): Promise<{ session: RunningSession; driver: Driver }>;
  liveViewUrl(sessionId: string): Promise<string>;
  /** The session's recordings as GET /v1/sessions/{id}/recordings answers them. */
  recordings(sessionId: string): Promise<{ status: number; body: unknown }>;
}

/** The JSON-RPC code of the MCP specification for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

export const resourceUri = (sessionId: string, what: 'snapshot' | 'screenshot' | 'live-view' | 'recording') => `browser-session://${sessionId}/${what}`;

export function registerResources(server: McpServer, scope: ResourceScope): void {
  /** The resource's browser session: a failure the client can read, as a tool's would be. */
  const opened = async (uri: URL, id: string, kind: 'input' | 'screenshot') => {
    try {
      return await scope.open(id, kind);
    } catch (err) {
      if (err instanceof ToolFailure) throw new McpError(RESOURCE_NOT_FOUND, `${uri.href}: ${err.message}`);
      throw err;
    }
  };
  const idOf = (variables: Record<string, string | string[]>) => String(variables.session_id);
  const listed = (
    what: Parameters<typeof resourceUri>[1],
    name: (id: string) => string,
    mimeType: string,
    ids: (s: ReturnType<ResourceScope['sessions']>) => string[],
  ) =>
    new ResourceTemplate(resourceUri('{session_id}', what), {
      list: () => ({ resources: ids(scope.sessions()).map((id): Resource => ({ uri: resourceUri(id, what), name: name(id), mimeType })) }),
    });

  server.registerResource(
    'page-snapshot',
    listed(
      'snapshot',
      (id) => `Page snapshot of browser session ${id}`,
      'text/markdown',
      (s) => s.running,
    ),
    {
      title: 'Page snapshot',
      description: "The current tab's accessibility snapshot (as anchor_snapshot answers it), with element refs the element tools take",
      mimeType: 'text/markdown',
    },
    async (uri, variables): Promise<ReadResourceResult> => {
      const { driver } = await opened(uri, idOf(variables), 'input');
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: await snapshotText(await driver.page()) }] };
    },
  );
  server.registerResource(
    'page-screenshot',
    listed(
      'screenshot',
      (id) => `Screenshot of browser session ${id}`,
      'image/png',
      (s) => s.running,
    ),
    { title: 'Page screenshot', description: "The current tab's viewport as a PNG image", mimeType: 'image/png' },
    async (uri, variables): Promise<ReadResourceResult> => {
      const { driver } = await opened(uri, idOf(variables), 'screenshot');
      const image = await (await driver.page()).screenshot({ type: 'png', timeout: 15_000 });
      return { contents: [{ uri: uri.href, mimeType: 'image/png', blob: image.toString('base64') }] };
    },
  );
  server.registerResource(
    'live-view',
    listed(
      'live-view',
      (id) => `Live view of browser session ${id}`,
      'text/uri-list',
      (s) => s.running,
    ),
    { title: 'Live view URL', description: 'A URL a person opens to watch the browser or take over', mimeType: 'text/uri-list' },
    async (uri, variables): Promise<ReadResourceResult> => {
      const id = idOf(variables);
      await opened(uri, id, 'input');
      return { contents: [{ uri: uri.href, mimeType: 'text/uri-list', text: await scope.liveViewUrl(id) }] };
    },
  );
  server.registerResource(
    'recording',
    listed(
      'recording',
      (id) => `Recording of browser session ${id}`,
      'application/json',
      (s) => [...s.running, ...s.ended],
    ),
    {
      title: 'Session recording',
      description: "The session's video recordings with their download links (file_link); encoded when the session ends, so a running session has none yet",
      mimeType: 'application/json',
    },
    async (uri, variables): Promise<ReadResourceResult> => {
      const res = await scope.recordings(idOf(variables));
      if (res.status === 404) throw new McpError(RESOURCE_NOT_FOUND, `${uri.href}: no such browser session in this project`);
      if (res.status !== 200) throw new McpError(-32603, `${uri.href}: the recordings could not be listed (HTTP ${res.status})`);
      const { data } = res.body as { data: { count: number; items: unknown[] } };
      const note = data.count === 0 ? 'No recording yet: a recording is encoded when its session ends (and only when the session records).' : undefined;
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ ...data, ...(note ? { note } : {}) }, null, 2) }] };
    },
  );
}
