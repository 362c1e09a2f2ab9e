-- Identity tokens (POST /v1/applications/{id}/tokens): a short-lived link an end user opens to
-- link their own account to an application. Kept by the hash of the token only; used once.
CREATE TABLE identity_tokens (
  token_hash text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  application_id text NOT NULL,
  callback_url text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz,
  identity_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);
