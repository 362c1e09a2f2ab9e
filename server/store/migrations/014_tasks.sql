-- Tasks, their versions and their executions (runs). Written by server/tasks/ only.
--
-- A task is deleted softly (deleted_at): executions still running when it is deleted finish
-- and report their outcome, which names the task and the version that ran.
CREATE TABLE tasks (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX tasks_project_name ON tasks (project_id, name) WHERE deleted_at IS NULL;
CREATE INDEX tasks_project_created ON tasks (project_id, created_at DESC);

-- The draft (version NULL, at most one not deleted) and the deployed versions (1, 2, ...).
-- A deploy takes one more than the highest number the task ever had, deleted ones
-- included; the unique index makes two concurrent deploys of one task collide, and the
-- loser retries with the next number (server/tasks/store.ts).
-- browser_configuration is stored as given (the draft's answer hides live_view.one_time_url
-- and x402, the draft itself keeps them).
CREATE TABLE task_versions (
  id text PRIMARY KEY,
  task_id text NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  project_id text NOT NULL,
  version integer CHECK (version IS NULL OR version >= 1),
  code text NOT NULL,
  language text NOT NULL DEFAULT 'typescript',
  description text,
  browser_configuration jsonb NOT NULL DEFAULT '{}',
  deleted boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX task_versions_number ON task_versions (task_id, version) WHERE version IS NOT NULL;
CREATE UNIQUE INDEX task_versions_one_draft ON task_versions (task_id) WHERE version IS NULL AND NOT deleted;

-- One execution of a task version. status: queued (waiting for a worker), running
-- (claimed_by names the node running it), then success, failure, timeout or cancelled.
-- run_id is set only for runs started through POST /v2/tasks/{taskId}/run.
-- session_id: the session the run was given (own_session false) or, once created, the one
-- it created (own_session true). The moves to a terminal state are conditional on the
-- state they leave, and write the task event in the same transaction: one event a run.
CREATE TABLE task_executions (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  api_key_id text NOT NULL,
  task_id text NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  task_version_id text NOT NULL REFERENCES task_versions(id) ON DELETE CASCADE,
  version_label text NOT NULL,
  run_id text UNIQUE,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'success', 'failure', 'timeout', 'cancelled')),
  input jsonb NOT NULL DEFAULT '{}',
  -- The version's configuration, or the legacy run's override, as the run's session gets it.
  browser_configuration jsonb NOT NULL DEFAULT '{}',
  session_id text,
  own_session boolean NOT NULL DEFAULT true,
  cleanup_sessions boolean NOT NULL DEFAULT true,
  identity_id text,
  identity_skip_validation boolean NOT NULL DEFAULT false,
  cancel_requested boolean NOT NULL DEFAULT false,
  output jsonb,
  error_type text,
  error_message text,
  root_cause text,
  logs jsonb NOT NULL DEFAULT '[]',
  cost_credits double precision NOT NULL DEFAULT 0,
  claimed_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  duration_ms integer
);
CREATE INDEX task_executions_task ON task_executions (task_id, created_at DESC);
CREATE INDEX task_executions_queued ON task_executions (created_at) WHERE status = 'queued';
CREATE INDEX task_executions_running ON task_executions (claimed_by) WHERE status = 'running';

-- Files a run saved (ctx.artifacts.save), in the blob storage area `task-artifacts`; served
-- by signed links (GET /files/task-artifacts/{id}).
CREATE TABLE task_artifacts (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  execution_id text NOT NULL REFERENCES task_executions(id) ON DELETE CASCADE,
  name text NOT NULL,
  storage_key text NOT NULL,
  size_bytes bigint NOT NULL,
  content_type text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX task_artifacts_execution ON task_artifacts (execution_id);

-- The key that signs artifact links: one per installation, shared by every node.
CREATE TABLE task_link_keys (
  id integer PRIMARY KEY CHECK (id = 1),
  secret text NOT NULL
);
