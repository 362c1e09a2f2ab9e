// The vendor SDK's current main (1.0.0-dev.4, not published on npm) differs from 0.16.3 in
// one resource: `tasks` (generate, generations.getStatus, run, runs.getStatus) replaces the
// v1 `task`. Its generated tests run on the published 0.16.3 client with that resource
// rebuilt here from the same calls (method, path, body), through the client's own request
// methods, so the answers are read the SDK's way.
import Anchorbrowser from 'anchorbrowser';

type Options = Parameters<Anchorbrowser['get']>[1];

export default class AnchorbrowserMain extends Anchorbrowser {
  tasks = {
    generate: (body: object, options?: Options) => this.post('/v2/tasks/generate', { body, ...options }),
    run: (taskId: string, body: object, options?: Options) => this.post(`/v2/tasks/${encodeURIComponent(taskId)}/run`, { body, ...options }),
    generations: {
      getStatus: (taskId: string, options?: Options) => this.get(`/v2/tasks/${encodeURIComponent(taskId)}/generation-status`, options),
    },
    runs: {
      getStatus: (runId: string, options?: Options) => this.get(`/v2/tasks/runs/${encodeURIComponent(runId)}/status`, options),
    },
  };
}
