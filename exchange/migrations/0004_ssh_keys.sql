-- SSH public keys of accounts (D32). A lease's endpoints accept the keys its
-- account had when it was provisioned; deleting a key keeps its row for that
-- history.
CREATE TABLE ssh_keys (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  name text NOT NULL,
  key_type text NOT NULL,
  public_key text NOT NULL,
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE UNIQUE INDEX ssh_keys_live_fingerprint ON ssh_keys (account_id, fingerprint)
  WHERE deleted_at IS NULL;
