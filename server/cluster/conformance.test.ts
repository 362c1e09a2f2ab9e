// The conformance suite against a three-node cluster through one address (a round-robin
// front, no stickiness): every request may land on a node that does not own its session.
// CI runs the families that exercise routing, within a few minutes, in two files of a
// cluster each: this one the sessions (S1-S4, S6-S9: sessions, CDP, live view, recordings,
// tags), execute-code (X1, X4) and every resource's lifecycle and project isolation (G9,
// G11); conformance-capabilities.test.ts the session files, MCP and a profile saved on one
// node and used on another. CLUSTER_CONFORMANCE_FULL=1 runs every check here. The
// nodes share one S3-compatible store (a local s3rver), as a cluster must: a profile or
// recording one node stored is read by another.
import { describe } from 'vitest';
import { conformanceThroughCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/conformance.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');
const full = process.env.CLUSTER_CONFORMANCE_FULL === '1';
/** S10 waits out a one-minute idle timeout: the full run has it. */
const ROUTING_FAMILIES = ['S1', 'S2', 'S3', 'S4', 'S6', 'S7', 'S8', 'S9', 'X1', 'X4', 'G9', 'G11'];

describe.skipIf(!databaseUrl)(
  `the conformance suite (${full ? 'every check' : 'routing families of sessions and code'}) through a round-robin front over three nodes`,
  () =>
    conformanceThroughCluster(
      databaseUrl!,
      full ? 'full' : 'routing families of sessions and code',
      full ? undefined : ROUTING_FAMILIES,
      full ? 3_600_000 : 300_000,
    ),
);
