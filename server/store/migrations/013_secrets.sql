-- The fingerprint of the key that seals stored secrets (identities, client certificates);
-- a start with another key stops instead of writing secrets the old ones cannot sit beside.
CREATE TABLE secrets_key (
  id integer PRIMARY KEY CHECK (id = 1),
  fingerprint text NOT NULL
);
