-- Tasks written by the model from a description (POST /v2/tasks/generate): one generation a
-- task, its status read by any node; node_id names the node that generates it, so that a
-- node killed mid-generation has its generations failed (its restart, or the node that
-- claims it dead), never left generating.
CREATE TABLE task_generations (
  task_id text PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'generating' CHECK (status IN ('generating', 'ready', 'failed')),
  error text,
  node_id text NOT NULL,
  -- What the model is asked: user_task, input_schema, output_schema, application_id.
  request jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX task_generations_generating ON task_generations (node_id) WHERE status = 'generating';
