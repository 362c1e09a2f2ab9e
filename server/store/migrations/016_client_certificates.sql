-- Client certificates a project's sessions present to one origin each. The certificate and
-- its chain are public and kept in clear (certificate_pem), with what the API describes of
-- them; the private key is kept only inside sealed_bundle: a PKCS#12 bundle and its password,
-- sealed with the secrets key for "client-certificate:<id>:key" (server/secrets).
CREATE TABLE client_certificates (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text NOT NULL,
  origin text NOT NULL,
  format text NOT NULL CHECK (format IN ('pkcs12', 'pem')),
  subject text NOT NULL,
  issuer text NOT NULL,
  not_before timestamptz NOT NULL,
  not_after timestamptz NOT NULL,
  fingerprint_sha256 text NOT NULL,
  certificate_pem text NOT NULL,
  sealed_bundle text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX client_certificates_project ON client_certificates (project_id, created_at DESC);
