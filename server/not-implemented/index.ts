// Operations that still document 501 answer it, with the general error body, until the
// capability that implements them lands and removes the 501 from openapi.yaml. Removing it
// takes the operation out of this placeholder, so the composition's type check demands a
// real handler for it.
import { routes } from '../../generated/routes.js';
import type { NotImplementedOperation } from '../../generated/handlers.js';
import type { Capability } from '../capability/index.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';

export function notImplementedHandlers(): Pick<AppHandlers, NotImplementedOperation> {
  const entries = routes
    .filter((r) => r.statuses.includes(501))
    .map((r) => [r.operationId, () => fail(501, `${r.method} ${r.path} is not implemented by this server yet`)]);
  return Object.fromEntries(entries) as Pick<AppHandlers, NotImplementedOperation>;
}

export function notImplemented(): Capability<NotImplementedOperation> {
  return { name: 'not-implemented', handlers: notImplementedHandlers() };
}
