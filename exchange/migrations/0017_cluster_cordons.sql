-- Cordoned clusters (issue 21, docs/api/admin.md): an operator cordons a
-- provider's cluster, its open sells and the resales of leases on it are
-- withdrawn (cancel_reason cluster_cordoned), and it takes no new sell or
-- resale until it is uncordoned. Set and cleared by the cluster's book
-- writer in the same statement as the withdrawals and the audit row
-- (market/cordon.ts), and read when a book is loaded: a cordon holds across
-- restarts and takeovers. NULL: not cordoned.
ALTER TABLE clusters ADD COLUMN cordoned_at timestamptz;
