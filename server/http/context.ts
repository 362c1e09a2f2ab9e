import type { Logger } from 'pino';

/** What every handler gets besides its request. */
export interface PublicContext {
  requestId: string;
  log: Logger;
  /** The TCP peer's address (never X-Forwarded-For, which a client can forge). */
  clientIp: string;
  /** Aborted when the client goes away before the answer: a handler that waits stops then. */
  signal?: AbortSignal;
}

/** Handlers of operations behind an API key (either header) also know whose request it is. */
export interface AuthedContext extends PublicContext {
  projectId: string;
  apiKeyId: string;
}
