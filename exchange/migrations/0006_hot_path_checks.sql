-- The tables written for every order (orders, leases, lease_nodes, fills,
-- ledger_entries) lose their foreign keys, and the ledger's balance check
-- runs once per statement instead of once per row.
--
-- Why: each foreign key is checked by a query of its own per row written
-- (SELECT ... FOR KEY SHARE on the parent), about 24 per matched order, and
-- the deferred balance trigger ran one more query per ledger row. Measured
-- with `npm run bench -- http`, these checks were over half of PostgreSQL's
-- CPU time per order (docs/persistence.md).
--
-- What keeps the references right instead: these rows are written only by a
-- book's single writer, from ids it holds in memory (accounts it has
-- authenticated, clusters and nodes it loaded, orders and leases it created
-- in the same or an earlier committed batch); the money property test checks
-- after every sequence that no row points at nothing
-- (exchange/src/market/integrity.ts). Foreign keys stay wherever writes are
-- rare (accounts, tokens, clusters, nodes, SSH keys, idempotency keys); the
-- ledger's balance stays a database check (below).

ALTER TABLE orders
  DROP CONSTRAINT orders_account_id_fkey,
  DROP CONSTRAINT orders_organization_id_fkey,
  DROP CONSTRAINT orders_cluster_id_fkey;

ALTER TABLE leases
  DROP CONSTRAINT leases_account_id_fkey,
  DROP CONSTRAINT leases_organization_id_fkey,
  DROP CONSTRAINT leases_buy_order_id_fkey,
  DROP CONSTRAINT leases_seller_account_id_fkey,
  DROP CONSTRAINT leases_cluster_id_fkey,
  DROP CONSTRAINT leases_source_lease_id_fkey;

ALTER TABLE lease_nodes
  DROP CONSTRAINT lease_nodes_lease_id_fkey,
  DROP CONSTRAINT lease_nodes_node_id_fkey;

ALTER TABLE fills
  DROP CONSTRAINT fills_buy_order_id_fkey,
  DROP CONSTRAINT fills_sell_order_id_fkey,
  DROP CONSTRAINT fills_lease_id_fkey;

ALTER TABLE ledger_entries
  DROP CONSTRAINT ledger_entries_transaction_id_fkey,
  DROP CONSTRAINT ledger_entries_account_id_fkey;

-- D3, still enforced by the database, once per statement: the new entries
-- of each transaction in a statement sum to zero. A transaction's entries
-- are all written by one statement (ledger.ts, change-set.ts), and entries
-- added to a transaction later would have to sum to zero themselves, so
-- every transaction still sums to zero; and the check reads only the
-- statement's own rows (no lookups). That entries name an existing
-- transaction and account is checked with the other references
-- (integrity.ts).
DROP TRIGGER ledger_entries_balanced ON ledger_entries;
-- Only the old per-row trigger looked entries up by transaction.
DROP INDEX ledger_entries_transaction;
DROP FUNCTION ledger_transaction_balanced();

CREATE FUNCTION ledger_statement_balanced() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  bad record;
BEGIN
  SELECT transaction_id, SUM(amount_cents) AS total INTO bad
    FROM new_entries GROUP BY transaction_id HAVING SUM(amount_cents) <> 0 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'ledger transaction % does not balance: sum is %', bad.transaction_id, bad.total
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER ledger_entries_balanced
  AFTER INSERT ON ledger_entries
  REFERENCING NEW TABLE AS new_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_statement_balanced();
