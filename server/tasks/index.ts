// Tasks: the legacy /v1/task family and the /v2 runs (handlers.ts), the run queue and its
// worker (worker.ts, run.ts), task code run in the sandbox (../sandbox), the artifacts'
// storage and signed links (artifact-links.ts). Task code asks a person through the
// interventions capability (composed before this one).
import type { Logger } from 'pino';
import type { Capability } from '../capability/index.js';
import type { ServiceConfig } from '../config/config.js';
import type { Db } from '../store/db.js';
import type { Secrets } from '../secrets/index.js';
import type { NodeLoad, SessionLifecycle, SessionUrls, WarmSource } from '../sessions/index.js';
import type { RecordingLinkService } from '../recording/index.js';
import type { BlobAreas } from '../storage/blobs.js';
import type { Sandbox } from '../sandbox/index.js';
import type { Interventions } from '../interventions/index.js';
import { ArtifactLinks } from './artifact-links.js';
import { taskHandlers, type TaskOperation } from './handlers.js';
import { TaskWorker } from './worker.js';
import { TaskHealer } from './healing.js';
import { WarmPairs } from './warm-pair.js';

export function tasks(d: {
  db: Db;
  config: ServiceConfig;
  log: Logger;
  blobs: BlobAreas;
  /** Derives the key of artifact links. */
  secrets: Secrets;
  sessions: NodeLoad & SessionLifecycle & SessionUrls & WarmSource;
  recordingLinks: RecordingLinkService;
  /** The server's one sandbox (execute-code makes it, with its warm children). */
  sandbox: Sandbox;
  /** ctx.requestIntervention: a run asks a person in its session. */
  interventions: Interventions;
}): Capability<TaskOperation> {
  const artifacts = new ArtifactLinks(d.db, d.blobs('task-artifacts'), d.config.publicUrl, d.secrets);
  const healer = new TaskHealer(d);
  // Runs the pool's browser serves start on a warm pair (warm-pair.ts): needs both warm pools.
  const warm = d.config.browserPoolSize > 0 && d.config.sandboxWarm > 0 ? new WarmPairs(d) : undefined;
  const worker = new TaskWorker({ ...d, artifacts, healer, ...(warm ? { warm } : {}) });
  return {
    name: 'tasks',
    handlers: taskHandlers({ db: d.db, config: d.config, sessions: d.sessions, worker }),
    // GET /files/task-artifacts/{id}: the artifacts' signed links.
    routes: (app) => artifacts.route(app),
    // The healer after the worker: a run that fails while stopping may still start a healing.
    workers: [worker, healer],
    recoverNode: (node) => worker.recoverNode(node),
  };
}
