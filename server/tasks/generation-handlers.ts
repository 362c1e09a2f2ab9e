// POST /v2/tasks/generate and GET /v2/tasks/{taskId}/generation-status: a task whose code
// the operator's model writes from a description. The task and its generation row are made
// in one transaction and the answer is given at once; the generator (generator.ts) writes
// the code in the background on this node, and any node answers the status from the row.
import type { Db } from '../store/db.js';
import type { ServiceConfig } from '../config/config.js';
import type { AppHandlers } from '../http/app.js';
import { fail } from '../http/errors.js';
import type { SessionCreateBody } from '../sessions/index.js';
import { checkConfiguration } from './configuration.js';
import * as generations from './generation-store.js';
import * as store from './store.js';
import type { TaskGenerator } from './generator.js';

export type GenerationOperation = 'generateTask' | 'getTaskGenerationStatus';

/** Two parameters of one name would be one key of input_params (or of the result). */
function duplicateName(params: { display_name: string }[] | undefined): string | undefined {
  const seen = new Set<string>();
  for (const p of params ?? []) {
    if (seen.has(p.display_name)) return p.display_name;
    seen.add(p.display_name);
  }
  return undefined;
}

export function generationHandlers(d: {
  db: Db;
  config: Pick<ServiceConfig, 'llm'>;
  sessions: { validate(projectId: string, body: SessionCreateBody | undefined): Promise<string | undefined> };
  generator: Pick<TaskGenerator, 'generate' | 'nodeId'>;
}): Pick<AppHandlers, GenerationOperation> {
  const { db } = d;
  return {
    async generateTask(req, ctx) {
      // As perform-web-task answers: the model is the operator's to configure.
      if (!d.config.llm) return fail(503, 'No LLM provider is configured');
      const b = req.body;
      for (const [field, list] of [
        ['input_schema', b.input_schema],
        ['output_schema', b.output_schema],
      ] as const) {
        const twice = duplicateName(list);
        if (twice !== undefined) return fail(400, `${field} names the parameter ${JSON.stringify(twice)} twice`);
      }
      const configuration = b.task_browser_default_configuration ?? {};
      const refused = await checkConfiguration(d.sessions, ctx.projectId, configuration);
      if (refused) return fail(400, refused.replace(/^browserConfiguration/, 'task_browser_default_configuration'));
      if (b.application_id && !(await generations.applicationInProject(db, ctx.projectId, b.application_id))) return fail(404, 'Application not found');
      const ask: generations.GenerationAsk = {
        user_task: b.user_task,
        ...(b.input_schema ? { input_schema: b.input_schema } : {}),
        ...(b.output_schema ? { output_schema: b.output_schema } : {}),
        ...(b.application_id ? { application_id: b.application_id } : {}),
      };
      const task = await store.createTask(db, {
        projectId: ctx.projectId,
        name: b.name,
        description: b.description,
        with: (tx, t) => generations.insertGeneration(tx, { taskId: t.id, projectId: ctx.projectId, nodeId: d.generator.nodeId, ask }),
      });
      if (task === 'name_taken') return fail(409, `A task named ${b.name} already exists`);
      d.generator.generate(task, ask, configuration);
      return { status: 200, body: { id: task.id, status: 'generating' } };
    },

    async getTaskGenerationStatus(req, ctx) {
      const task = await store.getTask(db, ctx.projectId, req.params.taskId);
      if (!task) return fail(404, 'Task not found');
      const g = await generations.getGeneration(db, ctx.projectId, task.id);
      // A task made by POST /v1/task was never generated: there is nothing to wait for.
      if (!g) return { status: 200, body: { id: task.id, status: 'ready' } };
      return { status: 200, body: { id: task.id, status: g.status, ...(g.status === 'failed' && g.error ? { error: g.error } : {}) } };
    },
  };
}
