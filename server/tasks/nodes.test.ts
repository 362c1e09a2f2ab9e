// Two servers on one PostgreSQL (PostgreSQL only): runs queued through either are claimed by
// one node each, never both; a cancel asked of the node that does not run the run reaches
// the node that does (through the database), which stops it with task.cancelled.
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { installationId } from '../browser/index.js';
import { loadConfig } from '../config/config.js';
import { createLogger } from '../log.js';
import { startServer, type RunningServer } from '../server.js';
import { withPostgresSchema } from '../store/pg-schema.js';
import { b64, call, until } from './test-support.js';

// The task's own code (the user's program, in the sandbox): a run still going when the test acts.
const SLOW = `export default async function run(ctx: any) {
  await new Promise((r) => setTimeout(r, 120000));
  return 'late';
}
`;

interface Node extends RunningServer {
  nodeId: string;
  request(path: string, init?: RequestInit): Promise<Response>;
}

describe.skipIf(!process.env.DATABASE_URL)('task runs on two servers sharing PostgreSQL', () => {
  it('each run is claimed by one node; a cancel through the other node stops it', { timeout: 180_000 }, async () => {
    await withPostgresSchema(process.env.DATABASE_URL!, 'test_task_nodes', async (databaseUrl) => {
      const apiKey = `sk_test_${randomBytes(16).toString('hex')}`;
      const secretsKey = randomBytes(32).toString('hex');
      const dirs: string[] = [];
      const nodes: Node[] = [];
      try {
        for (let i = 0; i < 2; i++) {
          const dataDir = mkdtempSync(join(tmpdir(), 'cb-task-node-'));
          dirs.push(dataDir);
          const config = loadConfig({
            PORT: '0',
            DATA_DIR: dataDir,
            DATABASE_URL: databaseUrl,
            BOOTSTRAP_API_KEY: apiKey,
            ALLOW_PRIVATE_NETWORKS: 'true',
            BROWSER_POOL_SIZE: '0',
            TASK_CONCURRENCY: '1',
            LOG_LEVEL: 'silent',
            SECRETS_KEY: secretsKey,
          });
          const server = await startServer(config, createLogger(config.logLevel));
          nodes.push({
            ...server,
            nodeId: `${hostname()}:${installationId(dataDir)}`,
            request: (path, init = {}) =>
              fetch(server.url + path, { ...init, headers: { 'service-api-key': apiKey, ...(init.headers as Record<string, string>) } }),
          });
        }
        const [a, b] = nodes;
        const task = await call(a, 'POST', '/v1/task', { name: 'two-nodes', language: 'typescript', code: b64(SLOW) });
        expect((await call(a, 'POST', `/v1/task/${task.body.data.id}/deploy`, { browserConfiguration: { recording: { active: false } } })).status).toBe(200);
        // Two runs, one through each node; TASK_CONCURRENCY 1 on each: each node takes one.
        const runs = [
          (await call(a, 'POST', `/v2/tasks/${task.body.data.id}/run`, { input_params: {} })).body.run_id,
          (await call(b, 'POST', `/v2/tasks/${task.body.data.id}/run`, { input_params: {} })).body.run_id,
        ];
        const claimed = await until(
          () =>
            a.db.query<{ run_id: string; claimed_by: string | null; status: string }>(
              'SELECT run_id, claimed_by, status FROM task_executions ORDER BY created_at',
            ),
          (rows) => rows.length === 2 && rows.every((r) => r.status === 'running'),
          60_000,
        );
        expect(new Set(claimed.map((r) => r.claimed_by))).toEqual(new Set(nodes.map((n) => n.nodeId)));

        // Cancel each run through the node that does not run it.
        for (const row of claimed) {
          const other = nodes.find((n) => n.nodeId !== row.claimed_by)!;
          const res = await call(other, 'POST', `/v2/tasks/runs/${row.run_id}/cancel`);
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          expect(res.body.status).toBe('cancelled');
        }
        // A cancel answers once its run stopped, or after 15 s with the stop still under way (a
        // loaded 2-core machine took that long once): both end cancelled.
        const ended = await until(
          () => a.db.query<{ run_id: string; status: string }>('SELECT run_id, status FROM task_executions'),
          (rows) => rows.every((r) => r.status !== 'running'),
          30_000,
        );
        expect(ended.map((r) => r.status)).toEqual(['cancelled', 'cancelled']);
        const events = await a.db.query<{ type: string; run_id: string }>("SELECT type, data->>'run_id' AS run_id FROM events WHERE type LIKE 'task.%'");
        expect(events.map((e) => e.type)).toEqual(['task.cancelled', 'task.cancelled']);
        expect(new Set(events.map((e) => e.run_id))).toEqual(new Set(runs));
      } finally {
        for (const n of nodes.reverse()) await n.close();
        for (const d of dirs) rmSync(d, { recursive: true, force: true });
      }
    });
  });
});
