// The web fetch, screenshot and page PDF tools, on browsers of their own (not sessions').
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { RateLimits } from '../http/rate-limit/index.js';
import type { Db } from '../store/db.js';
import type { SessionLookup } from '../sessions/index.js';
import { ToolService } from './fetch.js';
import { toolHandlers, type ToolHandlers } from './handlers.js';

export type { ToolHandlers } from './handlers.js';

export function tools(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup;
  rateLimits: RateLimits;
}): Capability<keyof ToolHandlers, { toolHandlers: ToolHandlers }> {
  const service = new ToolService({ config: d.config, log: d.log });
  const handlers = toolHandlers({ db: d.db, config: d.config, log: d.log, tools: service, sessions: d.sessions, rateLimits: d.rateLimits });
  return {
    name: 'tools',
    handlers,
    // The same handlers for the MCP server's tools: rate limits, charges and errors as over HTTP.
    provides: { toolHandlers: handlers },
    start: () => service.start(),
    // Requests in flight end with the tool's browsers.
    drain: () => service.stop(),
  };
}
