-- One writer per book, fenced (docs/ownership.md). A process writes a
-- book's market only while it holds that book's row here: the owner renews
-- `lease_until` (the database's clock) and a standby takes a book over once
-- it lapses, raising its epoch. One owner holds every book for now; the
-- rows are per book so that owners of single books need no new fence.
-- Rows are made by the exchange as it first acquires a book
-- (market/ownership.ts), so a new book needs no migration.
CREATE TABLE market_owners (
  book text PRIMARY KEY,
  -- Raised by every acquisition: a write batch names the epoch its writer
  -- acquired, and commits only while it is still the book's.
  epoch bigint NOT NULL DEFAULT 0,
  -- Who holds the book: a fresh id per acquisition; NULL when released.
  owner_id text,
  -- For people and for a restart on the same host: GPUX_INSTANCE_ID, the
  -- host name, the process id and the HTTP URL of the owner.
  instance_id text,
  host text,
  pid integer,
  url text,
  lease_until timestamptz
);

-- The fence of every write batch (market/change-set.ts): raises
-- `gpux_fenced` (SQLSTATE GX001) unless each book of the batch still has the
-- epoch its writer acquired. The shared advisory lock makes an acquisition
-- (which takes the same lock exclusively) wait for the batches already past
-- their fence, and a batch that reaches its fence during an acquisition wait
-- for it; the epochs are then read with a snapshot taken after the lock
-- (each statement of a volatile function takes its own), so a batch never
-- commits under an epoch that is no longer current.
CREATE FUNCTION gpux_fence(books json) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  stale text;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(4712026);
  SELECT string_agg(x.book, ', ') INTO stale
    FROM json_to_recordset(books) AS x(book text, epoch bigint)
   WHERE NOT EXISTS (
     SELECT 1 FROM market_owners o WHERE o.book = x.book AND o.epoch = x.epoch);
  IF stale IS NOT NULL THEN
    RAISE EXCEPTION 'gpux_fenced: this process no longer owns book(s) %', stale
      USING ERRCODE = 'GX001';
  END IF;
  RETURN 1;
END
$$;
