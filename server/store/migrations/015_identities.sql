-- Managed authentication. An application is a third-party web app (its login page `url`,
-- the other hosts its credentials may be entered on) with its ways to sign in (auth_flows,
-- each with the login the server runs). An identity holds one set of credentials for an
-- application, every value sealed (AES-256-GCM, bound to 'identity:<id>:<field>') in
-- `credentials`; its signed-in browser state is the profile `identity-<id>`.
CREATE TABLE applications (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  url text NOT NULL,
  description text,
  allowed_domains jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX applications_project_created ON applications (project_id, created_at DESC);

CREATE TABLE auth_flows (
  id text PRIMARY KEY,
  project_id text NOT NULL,
  application_id text NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  is_recommended boolean NOT NULL DEFAULT false,
  methods jsonb NOT NULL,
  custom_fields jsonb NOT NULL DEFAULT '[]',
  login jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_flows_application ON auth_flows (application_id, created_at);

-- An application with identities is not deleted (RESTRICT): the API answers 409 first.
CREATE TABLE identities (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  application_id text NOT NULL REFERENCES applications(id) ON DELETE RESTRICT,
  name text NOT NULL,
  source text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'active', 'failed')),
  metadata jsonb NOT NULL DEFAULT '{}',
  -- Sealed values only: {username_password: {username, password}, authenticator: {secret},
  -- custom: {<name>: value}}.
  credentials jsonb NOT NULL DEFAULT '{}',
  auth_flow_id text,
  failure_type text,
  failure_message text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX identities_project_created ON identities (project_id, created_at DESC);
CREATE INDEX identities_application ON identities (application_id);

-- How the identities of a session signed in (GET /v1/sessions/{id} shows it); null for a
-- session without identities.
ALTER TABLE sessions ADD COLUMN identities jsonb;
