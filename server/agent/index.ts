// The agent tools: perform-web-task, an agent loop over a session's browser driven by the
// operator's language model (server/llm/), and the files a session's agent may use. With no
// model configured perform-web-task answers 503. It provides the login agent, which an
// identity's login hands a page its rules do not understand (login-agent.ts).
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Interventions } from '../interventions/index.js';
import type { SessionLifecycle, SessionLookup } from '../sessions/index.js';
import type { Db } from '../store/db.js';
import { agentHandlers, type AgentHandlers } from './handlers.js';
import { agentFileHandlers } from './files-handler.js';
import { AgentFiles } from './files.js';
import { loginAgent, type LoginAgent } from './login-agent.js';
import { WebTaskRunner } from './runner.js';
import { AgentStepStream } from './step-stream.js';

export type { LoginAgent, LoginAgentOutcome, LoginVerdict } from './login-agent.js';

export function agent(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  sessions: SessionLookup & SessionLifecycle;
  interventions: Interventions;
}): Capability<keyof AgentHandlers | 'uploadAgentFiles', { loginAgent: LoginAgent | undefined }> {
  const log = d.log.child({ capability: 'agent' });
  const steps = new AgentStepStream({ db: d.db, requireKey: d.config.agentStepsRequireKey, projectOf: (id) => d.sessions.get(id)?.projectId });
  const runner = new WebTaskRunner({ ...d, log, steps });
  const { handlers, settled } = agentHandlers({ db: d.db, config: d.config, log, runner, steps });
  return {
    name: 'agent',
    provides: { loginAgent: loginAgent({ config: d.config, log: log.child({ part: 'login' }) }) },
    handlers: { ...handlers, ...agentFileHandlers({ sessions: d.sessions, files: new AgentFiles(d.config.sessionUploadsMaxBytes) }) },
    upgrade: (req, socket, head) => steps.upgrade(req, socket, head),
    // The agent lets go of a browser before it closes, whoever ends its session; those
    // following its steps are told the session ended.
    sessionHooks: {
      ending: async (s) => {
        runner.sessionEnding(s.id);
        steps.sessionEnded(s.id);
      },
    },
    // Before the sessions capability ends every browser: runs fail with a clear reason,
    // recorded while the database is still open.
    drain: async () => {
      runner.stopAll();
      await settled();
    },
    close: () => {
      steps.close();
      return runner.close();
    },
  };
}
