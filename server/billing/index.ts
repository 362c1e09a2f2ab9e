// GET /v1/billing: the project's account and usage, read from the credit ledger (credits/).
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import type { ClusterNode } from '../cluster/index.js';
import { billingHandlers, type BillingHandlers } from './handlers.js';

export function billing(d: { db: Db; config: ServiceConfig; cluster: ClusterNode }): Capability<keyof BillingHandlers> {
  return { name: 'billing', handlers: billingHandlers(d) };
}
