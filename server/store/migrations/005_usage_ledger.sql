-- The usage ledger: one row per charge to a project (a settled session, a web fetch).
-- A project's usage in a period is the sum of its rows created in that period. Written
-- through server/billing/ledger.ts only.
-- kind: 'session' (settled when the session ends; session_id set) or 'fetch' (a web fetch
-- answered 200).
CREATE TABLE usage_ledger (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind text NOT NULL,
  credits double precision NOT NULL CHECK (credits >= 0),
  session_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_ledger_project_created ON usage_ledger (project_id, created_at);
-- A session is charged once.
CREATE UNIQUE INDEX usage_ledger_session ON usage_ledger (session_id) WHERE kind = 'session';
