// Self-healing tasks: a run that failed with automation_failure, of a task whose
// selfHealing is on, has its code repaired by the operator's language model. The page's
// aria snapshot is taken at the failure, while the run's session is still open (capture);
// once the run's outcome is recorded and task.failed is out, the model is given the failing
// version's code, the error and the snapshot, and answers through the tool propose_fix. Code
// that parses becomes the draft or the next deployed version, with task.healed, in one
// transaction. Code that does not parse gets one retry with the syntax error, then healing
// gives up (logged, no version, no event). No model configured: nothing is healed.
//
// One healing per failed execution: task_healings is keyed by the execution (migration 024).
import { chromium, type Browser } from 'playwright-core';
import type { Logger } from 'pino';
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { Signals, Worker } from '../capability/index.js';
import { emitEvent } from '../outbox/emit.js';
import { ariaSnapshot } from '../page/aria.js';
import { languageModel, type LanguageModel, type Message, type ToolCall, type ToolSpec } from '../llm/index.js';
import { askForCode } from './model-code.js';
import type { ExecutionRow } from './queue-store.js';
import * as store from './store.js';

/** Longest the snapshot at the failure may take (it holds the run's end back). */
const CAPTURE_MS = 8_000;
/** The snapshot the model is sent, at most (characters). */
const MAX_SNAPSHOT_CHARS = 40_000;
/** Longest a healing may take, model calls included. */
const HEALING_MS = 5 * 60_000;

/** What the failure looked like, for the model. */
export interface FailureScene {
  settings: store.SelfHealing;
  /** The page's aria snapshot at the failure; undefined when it could not be taken. */
  snapshot: string | undefined;
  pageUrl: string | undefined;
}

export interface ProposedFix {
  code: string;
  error_explanation: string;
  fix_suggestion: string;
  confidence_score: number;
}

export const PROPOSE_FIX: ToolSpec = {
  name: 'propose_fix',
  description: 'Propose the whole new source of the task, which replaces the failing one.',
  parameters: {
    type: 'object',
    additionalProperties: false,
    required: ['code', 'error_explanation', 'fix_suggestion', 'confidence_score'],
    properties: {
      code: { type: 'string', description: 'The complete TypeScript source: export default async function run(ctx) { ... }' },
      error_explanation: { type: 'string', description: 'Why the run failed.' },
      fix_suggestion: { type: 'string', description: 'What the new code changes.' },
      confidence_score: { type: 'number', minimum: 0, maximum: 1, description: 'Confidence that the new code works, 0 to 1.' },
    },
  },
};

const SYSTEM = `You repair browser automation tasks that failed.
A task is a TypeScript module: \`export default async function run(ctx)\`, where ctx.page is a Playwright Page
(ctx.context, ctx.browser too), ctx.input holds the run's input parameters (strings), ctx.artifacts.save(name, data)
keeps a file, and the function's return value is the run's output.
You are given the failing code, the error (message, line, root cause) and the page's accessibility snapshot at the
moment of the failure. Answer only by calling the tool propose_fix with the complete new source (not a diff), an
explanation of the failure, what you changed, and your confidence from 0 to 1. Prefer selectors that the snapshot
shows exist (roles and accessible names, e.g. page.getByRole('button', { name: '...' })).`;

export interface HealerDeps {
  db: Db;
  config: Pick<ServiceConfig, 'llm' | 'llmTimeoutSeconds'>;
  log: Logger;
  /** Told: task.healed written. */
  signals: Pick<Signals, 'deliveriesWritten'>;
}

export class TaskHealer implements Worker {
  private readonly inflight = new Set<Promise<void>>();
  private readonly abort = new AbortController();

  constructor(private readonly d: HealerDeps) {}

  async start(): Promise<void> {}

  /** Stops the healings in flight (their model calls are aborted) and waits for them. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.inflight]);
  }

  /**
   * At an automation_failure, before the run's session ends: the task's settings and the
   * page's snapshot, or undefined when the task is not healed (off, or no model).
   */
  async capture(row: Pick<ExecutionRow, 'id' | 'project_id' | 'task_id'>, cdpUrl: string): Promise<FailureScene | undefined> {
    const [task] = await this.d.db.query<{ self_healing: store.SelfHealing }>('SELECT self_healing FROM tasks WHERE id = $1 AND project_id = $2', [
      row.task_id,
      row.project_id,
    ]);
    const settings = store.selfHealingOf(task?.self_healing);
    if (!settings.enabled) return undefined;
    if (!this.d.config.llm) {
      this.d.log.info({ executionId: row.id, taskId: row.task_id }, 'self-healing skipped: no language model is configured (LLM_PROVIDER)');
      return undefined;
    }
    const seen = await pageAt(cdpUrl).catch((err: unknown) => {
      this.d.log.warn({ err, executionId: row.id }, 'self-healing: the page snapshot at the failure could not be taken');
      return undefined;
    });
    return { settings, snapshot: seen?.snapshot, pageUrl: seen?.url };
  }

  /** After the failed run is recorded: heals in the background, within HEALING_MS. */
  heal(row: ExecutionRow, scene: FailureScene): void {
    const signal = AbortSignal.any([this.abort.signal, AbortSignal.timeout(HEALING_MS)]);
    const p = this.healNow(row, scene, signal)
      .catch(async (err: unknown) => {
        // The model's server failed, or the time limit: the healing ends, recorded as given up.
        this.d.log.error({ err, executionId: row.id }, 'self-healing failed');
        await this.giveUp(row, `healing failed: ${(err as Error)?.message ?? String(err)}`).catch(() => {});
      })
      .finally(() => this.inflight.delete(p));
    this.inflight.add(p);
  }

  private async healNow(row: ExecutionRow, scene: FailureScene, signal: AbortSignal): Promise<void> {
    const { db, log, signals } = this.d;
    const claimed = await db.query(
      'INSERT INTO task_healings (execution_id, project_id, task_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING execution_id',
      [row.id, row.project_id, row.task_id],
    );
    if (claimed.length === 0) return;
    const [version] = await db.query<store.VersionRow>('SELECT * FROM task_versions WHERE id = $1', [row.task_version_id]);
    const task = await store.getTask(db, row.project_id, row.task_id);
    if (!version || !task) return this.giveUp(row, 'the task or its version is gone');
    const code = Buffer.from(version.code, 'base64').toString('utf8');
    const model = languageModel(this.d.config.llm!, { timeoutMs: this.d.config.llmTimeoutSeconds * 1000 });
    const fix = await proposeFix(model, { code, row, scene }, signal);
    if ('refused' in fix) return this.giveUp(row, fix.refused);
    const fields: store.VersionFields = {
      code: Buffer.from(fix.code, 'utf8').toString('base64'),
      language: version.language,
      description: version.description,
      browserConfiguration: version.browser_configuration ?? {},
    };
    const asDraft = scene.settings.publish !== 'deploy';
    const healed = await db.transaction(async (tx) => {
      const saved = asDraft ? await store.saveDraft(tx, task, fields) : await store.deploy(tx, task, fields);
      await tx.query(`UPDATE task_healings SET status = 'healed', healed_task_version_id = $2, updated_at = now() WHERE execution_id = $1`, [row.id, saved.id]);
      await emitEvent(tx, signals, row.project_id, 'task.healed', {
        task_id: row.task_id,
        healed_task_version_id: saved.id,
        source_execution_id: row.id,
        ...(row.run_id ? { run_id: row.run_id } : {}),
        error_explanation: fix.error_explanation,
        fix_suggestion: fix.fix_suggestion,
        confidence_score: fix.confidence_score,
        published_as_draft: asDraft,
      });
      return saved;
    });
    log.info({ executionId: row.id, taskId: row.task_id, versionId: healed.id, asDraft, confidence: fix.confidence_score }, 'task healed');
  }

  private async giveUp(row: ExecutionRow, reason: string): Promise<void> {
    this.d.log.warn({ executionId: row.id, taskId: row.task_id, reason }, 'self-healing gave up');
    await this.d.db.query(`UPDATE task_healings SET status = 'given_up', reason = $2, updated_at = now() WHERE execution_id = $1`, [
      row.id,
      reason.slice(0, 2000),
    ]);
  }
}

/** The run's page (its last open tab) as a snapshot, over the session's CDP endpoint, bounded in time and size. */
async function pageAt(cdpUrl: string): Promise<{ snapshot: string; url: string } | undefined> {
  let browser: Browser | undefined;
  const deadline = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the snapshot took too long')), CAPTURE_MS).unref());
  try {
    return await Promise.race([
      (async () => {
        browser = await chromium.connectOverCDP(cdpUrl, { timeout: CAPTURE_MS });
        const page = browser
          .contexts()
          .flatMap((c) => c.pages())
          .filter((p) => !p.isClosed())
          .at(-1);
        if (!page) return undefined;
        const snapshot = await ariaSnapshot(page);
        return { snapshot: snapshot.length > MAX_SNAPSHOT_CHARS ? `${snapshot.slice(0, MAX_SNAPSHOT_CHARS)}\n[... snapshot cut]` : snapshot, url: page.url() };
      })(),
      deadline,
    ]);
  } finally {
    // Over CDP, close() disconnects: the session's browser stays for the run's end to handle.
    await (browser as Browser | undefined)?.close().catch(() => {});
  }
}

/** The model's fix, parsed and checked; one retry after code that does not parse. */
export async function proposeFix(
  model: LanguageModel,
  failure: { code: string; row: Pick<ExecutionRow, 'error_message' | 'root_cause'>; scene: Pick<FailureScene, 'snapshot' | 'pageUrl'> },
  signal: AbortSignal,
): Promise<ProposedFix | { refused: string }> {
  const { code, row, scene } = failure;
  const messages: Message[] = [
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: [
            'The failing task code:',
            '```ts',
            code,
            '```',
            `Error: ${row.error_message ?? 'unknown'}`,
            `Root cause: ${row.root_cause ?? 'unknown'}`,
            `Page URL at the failure: ${scene.pageUrl ?? 'unknown'}`,
            'Accessibility snapshot of the page at the failure:',
            scene.snapshot ?? '(no snapshot could be taken)',
          ].join('\n'),
        },
      ],
    },
  ];
  return askForCode(
    model,
    {
      system: SYSTEM,
      messages,
      tool: PROPOSE_FIX,
      read: (reply) => {
        const callOf = reply.toolCalls.find((c) => c.name === PROPOSE_FIX.name);
        return callOf ? readFix(callOf) : { refused: 'the model did not call propose_fix' };
      },
      failedTwice: 'the proposed code does not parse',
    },
    signal,
  );
}

function readFix(c: ToolCall): ProposedFix | { refused: string } {
  const a = c.arguments;
  const { code, error_explanation, fix_suggestion, confidence_score } = a;
  if (typeof code !== 'string' || code.trim() === '') return { refused: 'propose_fix without code' };
  if (typeof error_explanation !== 'string' || typeof fix_suggestion !== 'string')
    return { refused: 'propose_fix without error_explanation or fix_suggestion' };
  if (typeof confidence_score !== 'number' || !Number.isFinite(confidence_score)) return { refused: 'propose_fix without a numeric confidence_score' };
  // A model's 1.2 or -0.1 is still a fix: its confidence is kept within the contract's bounds.
  return { code, error_explanation, fix_suggestion, confidence_score: Math.min(1, Math.max(0, confidence_score)) };
}
