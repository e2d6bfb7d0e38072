-- The operators' API (issue 21, docs/api/admin.md): suspended accounts and
-- the audit log of every change an operator makes.

-- A suspended account's tokens are all refused (403 account_suspended) until
-- it is reinstated. Kept here, not in a process, so a suspension survives
-- restarts and takeovers; the reason is in the audit log.
ALTER TABLE accounts ADD COLUMN suspended_at timestamptz;

-- One row per admin call that changed something, written in the same
-- transaction as the change. `actor` is the operator: 'admin_token' for
-- GPUX_ADMIN_TOKEN, or the id of the account whose `admin`-scope token
-- called (actor_token_id then names that token). `before` and `after` are
-- what the call changed, as the API would show it (never a secret).
CREATE TABLE audit_log (
  id text PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  actor text NOT NULL CHECK (actor <> ''),
  actor_token_id text,
  action text NOT NULL CHECK (action ~ '^[a-z][a-z_]*\.[a-z][a-z_]*$'),
  target_type text NOT NULL CHECK (target_type ~ '^[a-z][a-z_]*$'),
  target_id text NOT NULL,
  reason text CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 1000),
  before jsonb,
  after jsonb
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_target ON audit_log (target_type, target_id, at DESC);
CREATE INDEX audit_log_actor ON audit_log (actor, at DESC);

-- What operators did is history: it is never edited or removed.
CREATE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the audit log is append-only' USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER audit_log_append_only
  BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();

-- The accounts an operator lists by scope: the live tokens of an account.
CREATE INDEX api_tokens_account ON api_tokens (account_id) WHERE revoked_at IS NULL;
