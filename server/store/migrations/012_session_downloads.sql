-- Files a session's pages downloaded, kept in blob storage (DATA_DIR/downloads by default)
-- after the browser's root is gone. A row is written once its file is stored: a download in
-- progress, cancelled or failed has none.
CREATE TABLE session_downloads (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  storage_key text NOT NULL,
  -- The name to save it under: the original made safe, unique within the session.
  file_name text NOT NULL,
  -- The name the page gave it, as the browser named it.
  original_file_name text NOT NULL,
  -- Where it came from and the page it started on; null when the start was not seen.
  url text,
  origin_url text,
  size_bytes bigint NOT NULL,
  duration_ms integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_downloads_project_session ON session_downloads (project_id, session_id, created_at);
CREATE UNIQUE INDEX session_downloads_file_name ON session_downloads (session_id, file_name);
