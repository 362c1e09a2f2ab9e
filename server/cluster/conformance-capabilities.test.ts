// The conformance suite's routing families of the capabilities beyond sessions, against a
// three-node cluster through one address (a round-robin front, no stickiness): session files
// (SF*), MCP (M*) and a profile saved on one node and used on another (P2). The sessions'
// and execute-code's families are in conformance.test.ts (which runs every check with
// CLUSTER_CONFORMANCE_FULL=1; this file then has nothing of its own). The nodes share one
// S3-compatible store (a local s3rver), as a cluster must: a profile or download one node
// stored is read by another.
import { describe } from 'vitest';
import { conformanceThroughCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/conformance-capabilities.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');
const full = process.env.CLUSTER_CONFORMANCE_FULL === '1';

describe.skipIf(!databaseUrl || full)('the conformance suite (routing families of files, MCP and profiles) through a round-robin front over three nodes', () =>
  conformanceThroughCluster(databaseUrl!, 'routing families of files, MCP and profiles', ['SF*', 'M*', 'P2'], 300_000),
);
