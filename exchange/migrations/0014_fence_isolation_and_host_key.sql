-- The fence of 0013 reads the books' epochs with a snapshot taken after its
-- advisory lock, which holds only under READ COMMITTED (each statement of a
-- volatile function takes its own snapshot there; under REPEATABLE READ or
-- SERIALIZABLE it would read the epochs as they were when the batch began,
-- before a takeover it waited for). The exchange's connections ask for READ
-- COMMITTED (db/postgres.ts); should one not, the fence refuses the batch
-- (SQLSTATE GX002) rather than let it pass on an old snapshot.
CREATE OR REPLACE FUNCTION gpux_fence(books json) RETURNS integer
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  stale text;
BEGIN
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'gpux_fence needs READ COMMITTED, the transaction is %',
      current_setting('transaction_isolation') USING ERRCODE = 'GX002';
  END IF;
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

-- Which machine and process namespace the owner ran in (its boot id and pid
-- namespace): a process starting where the recorded owner ran, whose pid is
-- gone there, may take the books at once (a restart after a crash). The host
-- name alone is not enough: two containers may share one, each with its own
-- pids.
ALTER TABLE market_owners ADD COLUMN host_key text;
