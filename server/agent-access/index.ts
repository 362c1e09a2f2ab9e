// Agent access: an agent with no key answers a challenge and gets a key for a new project.
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { RateLimits } from '../http/rate-limit/index.js';
import type { Db } from '../store/db.js';
import { agentAccessHandlers, type AgentAccessOperation } from './handlers.js';

export function agentAccess(d: { db: Db; config: ServiceConfig; log: Logger; rateLimits: RateLimits }): Capability<AgentAccessOperation> {
  return { name: 'agent-access', handlers: agentAccessHandlers(d) };
}
