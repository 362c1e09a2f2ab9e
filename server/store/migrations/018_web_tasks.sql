-- perform-web-task runs started with `async`: the status path reads them. A row is
-- RUNNING until its agent finishes (COMPLETED with result) or fails (FAILED with error);
-- steps grows as the agent acts. A RUNNING row past its deadline lost its server (a
-- restart) and is answered FAILED. Written through server/agent/store.ts only.
CREATE TABLE web_tasks (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  session_id text,
  status text NOT NULL CHECK (status IN ('RUNNING', 'COMPLETED', 'FAILED')),
  steps jsonb NOT NULL DEFAULT '[]',
  result jsonb,
  error text,
  deadline timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz
);
CREATE INDEX web_tasks_project ON web_tasks (project_id, created_at);
