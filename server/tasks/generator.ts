// Generated tasks, in the background: the model writes the code (task-writer.ts), and code
// that compiles is deployed as version 1 with the task's browser configuration, the
// generation marked ready in the same transaction; anything else marks it failed with why.
// Nothing is left generating: a stop aborts the model's call and fails the generation; a
// node killed mid-generation has its generations failed at its next start, or by the node
// that claims it dead (recoverNode).
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { LeftNode, Worker } from '../capability/index.js';
import { languageModel } from '../llm/index.js';
import * as generations from './generation-store.js';
import * as store from './store.js';
import { writeTaskCode } from './task-writer.js';

/** Longest a generation may take, model calls included. */
const GENERATION_MS = 5 * 60_000;

export class TaskGenerator implements Worker {
  private readonly inflight = new Set<Promise<void>>();
  private readonly abort = new AbortController();

  constructor(
    private readonly d: {
      db: Db;
      config: Pick<ServiceConfig, 'llm' | 'llmTimeoutSeconds'>;
      log: Logger;
      sessions: { readonly nodeId: string };
    },
  ) {}

  get nodeId(): string {
    return this.d.sessions.nodeId;
  }

  /** This node's own generations, left by its killed predecessor, failed before anything new. */
  async start(): Promise<void> {
    await this.recoverNode({ id: this.nodeId });
  }

  /** Aborts the generations in flight; each ends failed. */
  async stop(): Promise<void> {
    this.abort.abort(new Error('The server stopped during the generation'));
    await Promise.allSettled([...this.inflight]);
  }

  async recoverNode(node: LeftNode): Promise<void> {
    const own = node.id === this.nodeId;
    const error = own
      ? 'The server stopped during the generation (killed or crashed); generate the task again'
      : `Node ${node.id}, which was generating the task, stopped; generate the task again`;
    const n = await generations.failLeftBy(this.d.db, node.id, error, node.before);
    if (n > 0) this.d.log.warn({ nodeId: node.id, failed: n }, 'task generations left by a stopped server failed');
  }

  /** Generates the task's code in the background (its row is generating, on this node). */
  generate(task: store.TaskRow, ask: generations.GenerationAsk, browserConfiguration: store.BrowserConfiguration): void {
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(GENERATION_MS)]);
    const p = this.generateNow(task, ask, browserConfiguration, signal)
      .catch(async (err: unknown) => {
        const why = signal.aborted ? signal.reason : err;
        this.d.log.error({ err, taskId: task.id }, 'task generation failed');
        await this.fail(task, `The generation failed: ${(why as Error)?.message ?? String(why)}`).catch((e: unknown) =>
          this.d.log.error({ err: e, taskId: task.id }, 'a failed task generation could not be recorded'),
        );
      })
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  private async generateNow(
    task: store.TaskRow,
    ask: generations.GenerationAsk,
    browserConfiguration: store.BrowserConfiguration,
    signal: AbortSignal,
  ): Promise<void> {
    const { db, config, log } = this.d;
    const model = languageModel(config.llm!, { timeoutMs: config.llmTimeoutSeconds * 1000 });
    const written = await writeTaskCode(model, ask, signal);
    if ('refused' in written) return this.fail(task, `The task could not be generated: ${written.refused}`);
    const ready = await db.transaction(async (tx) => {
      if (!(await generations.endGeneration(tx, task.id, { status: 'ready' }))) return false;
      await store.deploy(tx, task, {
        code: Buffer.from(written.code, 'utf8').toString('base64'),
        language: 'typescript',
        description: task.description,
        browserConfiguration,
      });
      return true;
    });
    log.info({ taskId: task.id, ready }, ready ? 'task generated' : 'task generated after its generation was failed: not deployed');
  }

  private async fail(task: store.TaskRow, error: string): Promise<void> {
    this.d.log.warn({ taskId: task.id, error }, 'task generation failed');
    await generations.endGeneration(this.d.db, task.id, { status: 'failed', error });
  }
}
