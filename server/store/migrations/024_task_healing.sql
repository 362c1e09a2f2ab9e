-- Self-healing tasks: whether a failed run's code is repaired by the model, and how the fix
-- is published (draft or deployed); one healing per failed execution, claimed by its row.
ALTER TABLE tasks ADD COLUMN self_healing jsonb NOT NULL DEFAULT '{"enabled": false, "publish": "draft"}';

CREATE TABLE task_healings (
  execution_id text PRIMARY KEY REFERENCES task_executions(id) ON DELETE CASCADE,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  task_id text NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  -- started, healed (a new version), or given_up (the reason says why).
  status text NOT NULL DEFAULT 'started' CHECK (status IN ('started', 'healed', 'given_up')),
  healed_task_version_id text,
  reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
