// POST /v1/tools/execute-code: the body of an async function, given the session's page,
// context and browser, run in the sandbox (server/sandbox/) against a running session of
// the project. Composed after sessions. The sandbox it makes is also provided to the
// capabilities after it.
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import type { SessionLookup, SessionUrls } from '../sessions/index.js';
import { executeCodeHandlers, type ExecuteCodeHandlers } from './handlers.js';

export function executeCode(d: {
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup & SessionUrls;
}): Capability<keyof ExecuteCodeHandlers, { sandbox: Sandbox }> {
  const sandbox = createSandbox({ config: d.config, log: d.log });
  const runs = executeCodeHandlers({ sandbox, sessions: d.sessions, log: d.log });
  return {
    name: 'execute-code',
    handlers: runs.handlers,
    provides: { sandbox },
    // A session that ends stops the code running in it (answered 409).
    sessionHooks: { ending: async (s) => runs.sessionEnding(s.id) },
    // Runs in flight stop with the server; then the warm children go.
    drain: async () => runs.stopAll(),
    close: () => sandbox.close(),
  };
}
