// The conformance suite against a three-node cluster through one address (a round-robin
// front, no stickiness): every request may land on a node that does not own its session.
// CI runs the families that exercise routing (sessions, CDP, live view, recordings, session
// files, MCP, execute-code, a profile saved on one node and used on another), within a few
// minutes; CLUSTER_CONFORMANCE_FULL=1 runs every check. The nodes share one S3-compatible
// store (a local s3rver), as a cluster must: a profile or recording one node stored is read
// by another.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalS3, type LocalS3 } from '../testing/s3-server.js';
import { startTestCluster, type TestCluster } from './test-support.js';

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) console.log('server/cluster/conformance.test.ts skipped: several nodes need PostgreSQL (set DATABASE_URL)');
const full = process.env.CLUSTER_CONFORMANCE_FULL === '1';
/** S10 waits out a one-minute idle timeout: the full run has it. */
const ROUTING_FAMILIES = ['S1', 'S2', 'S3', 'S4', 'S6', 'S7', 'S8', 'S9', 'SF*', 'M*', 'X1', 'X4', 'G9', 'G11', 'P2'];
const root = fileURLToPath(new URL('../..', import.meta.url));

describe.skipIf(!databaseUrl)(`the conformance suite (${full ? 'every check' : 'routing families'}) through a round-robin front over three nodes`, () => {
  let cluster: TestCluster;
  let s3: LocalS3;
  const adminToken = `adm_${randomBytes(24).toString('hex')}`;
  const reportDir = mkdtempSync(join(tmpdir(), 'cb-cluster-conformance-'));

  beforeAll(async () => {
    s3 = await startLocalS3();
    cluster = await startTestCluster({ databaseUrl: databaseUrl!, count: 3, env: { ADMIN_TOKEN: adminToken, MAX_CONCURRENT_BROWSERS: '4', ...(s3.env() as Record<string, string>) } });
  }, 240_000);
  afterAll(async () => {
    await cluster?.close();
    await s3?.stop();
    rmSync(reportDir, { recursive: true, force: true });
  }, 60_000);

  it('passes', async () => {
    const report = join(reportDir, 'report.json');
    const args = ['--import', 'tsx', 'conformance/cli.ts', '--base-url', cluster.front.url, '--api-key', cluster.apiKey, '--admin-token', adminToken, '--json', report];
    if (!full) args.push('--only', ROUTING_FAMILIES.join(','));
    let out = '';
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.once('exit', resolve);
    });
    const summary = JSON.parse(readFileSync(report, 'utf8')).summary as { passed: number; failed: number; skipped: number };
    console.log(`cluster conformance (${full ? 'full' : 'routing families'}): ${JSON.stringify(summary)}`);
    // Every request went through the front, and the front spread them over all three nodes.
    expect(cluster.front.targets.every((t) => (cluster.front.counts.get(t) ?? 0) > 0)).toBe(true);
    expect(summary.passed).toBeGreaterThan(0);
    expect(out.split('\n').filter((l) => /\] FAIL /.test(l)).join('\n')).toBe('');
    expect(code).toBe(0);
  }, full ? 3_600_000 : 300_000);
});
