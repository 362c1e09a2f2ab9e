-- Uploaded browser extensions: the validated ZIP kept in blob storage (files under
-- DATA_DIR/extensions by default) at storage_key, its manifest's fields here. A session
-- that names an extension unpacks its own copy into the browser's root at launch, so
-- deleting one never touches a running session.
CREATE TABLE extensions (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  manifest jsonb NOT NULL,
  storage_key text NOT NULL,
  -- Where the extension is in the archive: '' (its root) or its one top folder, 'name/'.
  archive_prefix text NOT NULL,
  size_bytes bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX extensions_project ON extensions (project_id, created_at);
