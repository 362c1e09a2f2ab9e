-- Session recordings: one MP4 a row, stored through the recording storage (files under
-- DATA_DIR/recordings by default) at storage_key. The row and its session.recording.ready
-- event are written in one transaction.
CREATE TABLE recordings (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  is_primary boolean NOT NULL DEFAULT true,
  storage_key text NOT NULL,
  duration_ms integer NOT NULL,
  size_bytes bigint NOT NULL,
  -- Time the recording was paused (cut from the video), in milliseconds.
  paused_ms integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX recordings_project_session ON recordings (project_id, session_id);
CREATE UNIQUE INDEX recordings_one_primary ON recordings (session_id) WHERE is_primary;

-- The key that signs recordings' download links (file_link): one per installation, shared
-- by every node of a PostgreSQL deployment.
CREATE TABLE recording_link_keys (
  id integer PRIMARY KEY CHECK (id = 1),
  secret text NOT NULL
);
