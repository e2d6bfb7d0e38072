-- Each account's events, queued by the change that reports them and
-- numbered after its commit (D35, issue 22, docs/api/account-events.md,
-- account-events/numberer.ts; docs/benchmarks.md "What each account's
-- events cost the order path").
--
-- A book's write batch (market/change-set.ts) and appendAccountEvents write
-- their events as ONE row here, in the statement or transaction that makes
-- the change: committed with it or not at all. They no longer touch
-- account_event_heads: the batch's counter upserts and the join that
-- numbered its events were about a fifth of PostgreSQL's CPU per batch.
--
-- The numberer (one at a time: a transaction-level advisory lock) takes the
-- committed rows in id order, numbers each account's events from its
-- counter in that order (within a row, in the order recorded), inserts them
-- into account_events, advances account_event_heads and deletes the rows it
-- took, all in one transaction. So an account's numbers stay contiguous from
-- 1 and are never reused, and account_event_heads never runs ahead of the
-- events a reader can see. A row committed after a higher id was numbered
-- (concurrent transactions) is numbered by a later round. A change that
-- commits before another starts has the lower id, so its events get the
-- lower numbers.
CREATE TABLE account_event_batches (
  id bigserial PRIMARY KEY,
  -- [{account_id, event_id, kind, payload, created_ms}, …] in the order recorded.
  events json NOT NULL
);
