// The conformance suite against a three-node cluster through one address (a round-robin
// front, no stickiness): every request may land on a node that does not own its session.
// CI runs the families that exercise routing, within a few minutes, in two files of a
// cluster each: this one the sessions (S1-S4, S6-S9: sessions, CDP, live view, recordings,
// tags), execute-code (X1, X4) and every resource's lifecycle and project isolation (G9,
// G11); conformance-capabilities.test.ts the session files, MCP and a profile saved on one
// node and used on another. CLUSTER_CONFORMANCE_FULL=1 runs every check here. The
// nodes share one S3-compatible store (a local s3rver), as a cluster must: a profile or
// recording one node stored is read by another.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { runConformance, startTestCluster, type TestCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/conformance.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');
const full = process.env.CLUSTER_CONFORMANCE_FULL === '1';
/** S10 waits out a one-minute idle timeout: the full run has it. */
const ROUTING_FAMILIES = ['S1', 'S2', 'S3', 'S4', 'S6', 'S7', 'S8', 'S9', 'X1', 'X4', 'G9', 'G11'];

describe.skipIf(!databaseUrl)(
  `the conformance suite (${full ? 'every check' : 'routing families of sessions and code'}) through a round-robin front over three nodes`,
  () => {
    let cluster: TestCluster;
    let s3: LocalS3;
    const adminToken = `adm_${randomBytes(24).toString('hex')}`;

    beforeAll(async () => {
      s3 = await startLocalS3();
      cluster = await startTestCluster({
        databaseUrl: databaseUrl!,
        count: 3,
        env: { ADMIN_TOKEN: adminToken, MAX_CONCURRENT_BROWSERS: '4', ...(s3.env() as Record<string, string>) },
      });
    }, 240_000);
    afterAll(async () => {
      await cluster?.close();
      await s3?.stop();
    }, 60_000);

    it(
      'passes',
      async () => {
        const { summary, out, code } = await runConformance(cluster, adminToken, full ? undefined : ROUTING_FAMILIES);
        console.log(`cluster conformance (${full ? 'full' : 'routing families of sessions and code'}): ${JSON.stringify(summary)}`);
        // Every request went through the front, and the front spread them over all three nodes.
        expect(cluster.front.targets.every((t) => (cluster.front.counts.get(t) ?? 0) > 0)).toBe(true);
        expect(summary.passed).toBeGreaterThan(0);
        expect(
          out
            .split('\n')
            .filter((l) => /\] FAIL /.test(l))
            .join('\n'),
        ).toBe('');
        expect(code).toBe(0);
      },
      full ? 3_600_000 : 300_000,
    );
  },
);
