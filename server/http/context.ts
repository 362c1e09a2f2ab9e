import type { Logger } from 'pino';

/** What every handler gets besides its request. */
export interface PublicContext {
  requestId: string;
  log: Logger;
}

/** Handlers of operations behind service-api-key also know whose request it is. */
export interface AuthedContext extends PublicContext {
  projectId: string;
  apiKeyId: string;
}
