-- D23: a claim of an Idempotency-Key names the exchange process (its
-- GPUX_INSTANCE_ID) that runs its request, so that process, when it starts
-- again, can release the claims it left in progress: a claim's answer is
-- written in the same statement as the request's effect (change-set.ts), so
-- a claim still in progress after a restart never committed anything and a
-- client's retry may run it.
ALTER TABLE idempotency_keys ADD COLUMN instance_id text;
