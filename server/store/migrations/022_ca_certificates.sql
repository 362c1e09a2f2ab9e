-- CA certificates a project's sessions trust (POST /v1/certificates): public certificates,
-- kept as PEM, imported into each session's own NSS database at launch.
CREATE TABLE ca_certificates (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  certificate_pem text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);
