// The conformance suite's routing families of the capabilities beyond sessions, against a
// three-node cluster through one address (a round-robin front, no stickiness): session files
// (SF*), MCP (M*) and a profile saved on one node and used on another (P2). The sessions'
// and execute-code's families are in conformance.test.ts (which runs every check with
// CLUSTER_CONFORMANCE_FULL=1; this file then has nothing of its own). The nodes share one
// S3-compatible store (a local s3rver), as a cluster must: a profile or download one node
// stored is read by another.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { runConformance, startTestCluster, type TestCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/conformance-capabilities.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');
const full = process.env.CLUSTER_CONFORMANCE_FULL === '1';
const FAMILIES = ['SF*', 'M*', 'P2'];

describe.skipIf(!databaseUrl || full)(
  'the conformance suite (routing families of files, MCP and profiles) through a round-robin front over three nodes',
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

    it('passes', async () => {
      const { summary, out, code } = await runConformance(cluster, adminToken, FAMILIES);
      console.log(`cluster conformance (routing families of files, MCP and profiles): ${JSON.stringify(summary)}`);
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
    }, 300_000);
  },
);
