-- D3: an account with a credit limit holds, for each open buy, the most the
-- buy can still cost (compute + fee). What the account owes (-balance) plus
-- its holds never exceeds its limit.
--
-- The hold is taken at acceptance, before the order reaches its book's
-- writer, by one call of gpux_hold_credit: it locks the account's row, so
-- two buys of one account (in any book, from any exchange process) are
-- checked one after the other, each seeing the other's hold. The write
-- batch that closes or fills the order updates or deletes its hold in the
-- same statement as the ledger rows (change-set.ts), so owed + held never
-- counts a charge twice nor misses one.

CREATE TABLE credit_holds (
  order_id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  -- The order's book: a book loads its holds by these (book-loader.ts).
  gpu_type gpux_gpu_type NOT NULL,
  zone gpux_zone NOT NULL,
  cents bigint NOT NULL CHECK (cents > 0),
  created_ms bigint NOT NULL
);
CREATE INDEX credit_holds_account ON credit_holds (account_id);
CREATE INDEX credit_holds_book ON credit_holds (gpu_type, zone);
-- Holds a stopped process left are looked for by age (orders/credit.ts).
CREATE INDEX credit_holds_created ON credit_holds (created_ms);

-- Hold p_cents for order p_order of p_account if owed + held + p_cents stays
-- within the account's limit. granted is NULL when the account has no limit
-- (nothing is held); otherwise owed_cents and held_cents are what the
-- account owed and held before this call.
CREATE FUNCTION gpux_hold_credit(
  p_account text, p_order text, p_gpu_type gpux_gpu_type, p_zone gpux_zone,
  p_cents bigint, p_now_ms bigint,
  OUT granted boolean, OUT limit_cents bigint, OUT owed_cents bigint, OUT held_cents bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  -- The row lock serializes the account's holds. In READ COMMITTED the next
  -- statement takes a new snapshot, so it sees every hold committed by
  -- whoever held the lock before. NO KEY UPDATE does not wait for write
  -- batches (their ledger rows only take KEY SHARE on the account).
  SELECT a.credit_limit_cents INTO limit_cents FROM accounts a WHERE a.id = p_account
    FOR NO KEY UPDATE;
  IF limit_cents IS NULL THEN
    RETURN;
  END IF;
  -- One statement, so one snapshot: a batch that drops a hold and writes
  -- its charges commits either before it (the charges seen) or after (the
  -- hold seen). Two statements could see neither: the hold gone and the
  -- charges not yet there.
  SELECT (SELECT -COALESCE(SUM(e.amount_cents), 0) FROM ledger_entries e WHERE e.account_id = p_account),
         (SELECT COALESCE(SUM(h.cents), 0) FROM credit_holds h WHERE h.account_id = p_account)
    INTO owed_cents, held_cents;
  granted := owed_cents + held_cents + p_cents <= limit_cents;
  IF granted THEN
    INSERT INTO credit_holds (order_id, account_id, gpu_type, zone, cents, created_ms)
      VALUES (p_order, p_account, p_gpu_type, p_zone, p_cents, p_now_ms);
  END IF;
END;
$$;
