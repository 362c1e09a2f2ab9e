// Operations that still document 501 answer it, with the general error body, until the
// work that implements them lands and removes the 501 from openapi.yaml. Removing it makes
// this placeholder stop type-checking for that operation, so a real handler must exist.
import { routes } from '../../generated/routes.js';
import type { NotImplementedOperation } from '../../generated/handlers.js';
import type { AppHandlers } from './app.js';
import { fail } from './errors.js';

export function notImplementedHandlers(): Pick<AppHandlers, NotImplementedOperation> {
  const entries = routes
    .filter((r) => r.statuses.includes(501))
    .map((r) => [r.operationId, () => fail(501, `${r.method} ${r.path} is not implemented by this server yet`)]);
  return Object.fromEntries(entries) as Pick<AppHandlers, NotImplementedOperation>;
}
