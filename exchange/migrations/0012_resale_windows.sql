-- D27: a resale rests at once and offers the time of its lease from
-- available_from to the lease's end, exactly; a buy that matches before
-- available_from takes the nodes over at transfer_time, fired by the book's
-- own timer.

-- The window the book matches a sell against (engine windowStartAt /
-- windowEndAt); NULL: from start_ms for duration_hours, as before.
ALTER TABLE orders
  ADD COLUMN window_start_ms bigint,
  ADD COLUMN window_end_ms bigint;

-- transfer_ms: a sold lease's holder keeps access until then (NULL: not sold
-- ahead). opened_ms: when the lease's provision event was written: at its
-- start, which for a lease bought ahead of its transfer is later than its
-- creation (NULL until then).
ALTER TABLE leases
  ADD COLUMN transfer_ms bigint,
  ADD COLUMN opened_ms bigint;
UPDATE leases SET opened_ms = created_ms;
