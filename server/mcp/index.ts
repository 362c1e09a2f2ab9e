// The hosted MCP server at /mcp (Streamable HTTP, the official SDK): MCP clients start
// cloud browsers and drive them through tools, with no SDK of ours. Its browser sessions
// are the project's, made by the SessionManager like any other (limits, billing, events).
import type { Logger } from 'pino';
import { findKey } from '../auth/api-keys.js';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import type { SessionLifecycle, SessionLookup, SessionUrls } from '../sessions/index.js';
import type { RecordingHandlers } from '../recording/index.js';
import type { ToolHandlers } from '../tools/index.js';
import { Drivers } from './driver.js';
import { McpEndpoint } from './endpoint.js';

export function mcp(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup & SessionLifecycle & SessionUrls;
  toolHandlers: ToolHandlers;
  recordingHandlers: RecordingHandlers;
}): Capability {
  const drivers = new Drivers();
  const endpoint = new McpEndpoint({
    sessions: d.sessions,
    drivers,
    toolHandlers: d.toolHandlers,
    recordingHandlers: d.recordingHandlers,
    allowPrivateNetworks: d.config.allowPrivateNetworks,
    log: d.log.child({ capability: 'mcp' }),
    version: '0.1.0',
    authenticate: (key) => findKey(d.db, key),
    idleTimeoutMs: d.config.mcpIdleTimeoutSeconds * 1000,
  });
  return {
    name: 'mcp',
    routes: (app) => endpoint.routes(app),
    // Playwright lets go of a browser before it closes, whoever ends its session.
    sessionHooks: {
      ending: (s) => drivers.drop(s.id),
      // The project's resources/list changes with its sessions.
      started: (s) => endpoint.resourcesChanged(s.projectId),
      ended: async (s) => endpoint.resourcesChanged(s.projectId),
    },
    // Before the sessions capability ends every browser: MCP sessions end theirs themselves.
    drain: async () => {
      await endpoint.close();
      await drivers.closeAll();
    },
  };
}
