-- Accounts and the double-entry ledger (decisions D1-D3, D24, D31).
-- Money is integer cents in bigint columns, never numeric or float.

CREATE TABLE organizations (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE accounts (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations (id),
  name text NOT NULL,
  -- D3: optional credit limit; NULL means none (post-paid without bound).
  credit_limit_cents bigint CHECK (credit_limit_cents IS NULL OR credit_limit_cents >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX accounts_organization ON accounts (organization_id);

-- D24: bearer tokens are stored only as a hash; scopes per token.
CREATE TABLE api_tokens (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  token_hash bytea NOT NULL UNIQUE,
  scopes text[] NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

-- D3: every movement of money is one balanced transaction of entries.
CREATE TABLE ledger_transactions (
  id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind ~ '^[a-z][a-z_]*$'),
  order_id text,
  lease_id text,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ledger_entries (
  id bigserial PRIMARY KEY,
  transaction_id text NOT NULL REFERENCES ledger_transactions (id),
  account_id text NOT NULL REFERENCES accounts (id),
  kind text NOT NULL CHECK (kind ~ '^[a-z][a-z_]*$'),
  -- Positive: the account is owed money; negative: it owes.
  amount_cents bigint NOT NULL CHECK (amount_cents <> 0),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id, id);
CREATE INDEX ledger_entries_transaction ON ledger_entries (transaction_id);

-- The sum of a transaction's entries is zero, checked at commit, so no code
-- path can create or destroy money (D3's invariant, enforced by the database).
CREATE FUNCTION ledger_transaction_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  total bigint;
BEGIN
  SELECT COALESCE(SUM(amount_cents), 0) INTO total
    FROM ledger_entries WHERE transaction_id = NEW.transaction_id;
  IF total <> 0 THEN
    RAISE EXCEPTION 'ledger transaction % does not balance: sum is %', NEW.transaction_id, total
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER ledger_entries_balanced
  AFTER INSERT ON ledger_entries
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_transaction_balanced();

-- History is append-only: a correction is a new transaction.
CREATE FUNCTION ledger_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the ledger is append-only' USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER ledger_entries_append_only
  BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_transactions_append_only
  BEFORE UPDATE OR DELETE ON ledger_transactions
  FOR EACH ROW EXECUTE FUNCTION ledger_append_only();

-- D2: both fees go to the platform's own account.
INSERT INTO organizations (id, name) VALUES ('org_platform', 'gpux platform');
INSERT INTO accounts (id, organization_id, name) VALUES ('acc_platform', 'org_platform', 'platform');
