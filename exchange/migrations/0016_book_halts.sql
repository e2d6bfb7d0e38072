-- Halted books (issue 21, docs/api/admin.md "Books"): while a book is halted
-- it takes no new order (409 market_halted), matches nothing, and its
-- timers wait; cancels still work. One row per book an operator ever halted;
-- `halted_ms` is NULL once resumed. Written by the book's write batch
-- (market/change-set.ts) with the audit row, so a halt survives restarts
-- and takeovers; the reason is in the audit log.
CREATE TABLE book_halts (
  gpu_type text NOT NULL,
  zone text NOT NULL,
  halted_ms bigint CHECK (halted_ms IS NULL OR halted_ms > 0),
  PRIMARY KEY (gpu_type, zone)
);

-- The market reads the suspended accounts when it opens (market/market.ts):
-- its books' writers refuse their orders. Read by this index
-- (suspended_at IS NOT NULL is its condition).
CREATE INDEX accounts_suspended ON accounts (suspended_at);
