-- Types that cost PostgreSQL less on the tables written for every order.
--
-- Why: each write batch is one statement (change-set.ts), and PostgreSQL
-- rebuilds every CHECK expression of a table it writes once per statement.
-- In a replay of the write batches of `npm run bench -- http` at 2,000
-- orders/s (docs/benchmarks.md) the CHECKs were about 15 % of the backend's
-- CPU; the seven that only allow a fixed set of words cost half of that.
-- An enum type keeps exactly the same rule, enforced by the type itself at
-- no per-statement cost. The outbox payload becomes `json`: see below.

-- The fixed vocabularies of the spec (service-spec.md, D12, D25).
CREATE TYPE gpux_side AS ENUM ('buy', 'sell');
CREATE TYPE gpux_order_type AS ENUM ('market', 'limit');
CREATE TYPE gpux_gpu_type AS ENUM ('h100', 'h200', 'b200', 'b300');
CREATE TYPE gpux_zone AS ENUM ('us-west-1', 'us-east-1', 'eu-west-1');
CREATE TYPE gpux_order_status AS ENUM ('pending', 'partial', 'filled', 'cancelled');
-- The book's own view of an open order (migration 0005).
CREATE TYPE gpux_book_state AS ENUM ('resting', 'scheduled', 'unseen');
CREATE TYPE gpux_lease_status AS ENUM ('provisioning', 'active', 'terminated', 'expired', 'failed');

ALTER TABLE orders
  DROP CONSTRAINT orders_side_check,
  DROP CONSTRAINT orders_order_type_check,
  DROP CONSTRAINT orders_gpu_type_check,
  DROP CONSTRAINT orders_zone_check,
  DROP CONSTRAINT orders_status_check,
  DROP CONSTRAINT orders_book_state_check;
ALTER TABLE orders
  ALTER COLUMN side TYPE gpux_side USING side::gpux_side,
  ALTER COLUMN order_type TYPE gpux_order_type USING order_type::gpux_order_type,
  ALTER COLUMN gpu_type TYPE gpux_gpu_type USING gpu_type::gpux_gpu_type,
  ALTER COLUMN zone TYPE gpux_zone USING zone::gpux_zone,
  ALTER COLUMN status TYPE gpux_order_status USING status::gpux_order_status,
  ALTER COLUMN book_state TYPE gpux_book_state USING book_state::gpux_book_state;

-- The partial index names the status words; it is made again on the new type.
DROP INDEX leases_live;
ALTER TABLE leases DROP CONSTRAINT leases_status_check;
ALTER TABLE leases
  ALTER COLUMN gpu_type TYPE gpux_gpu_type USING gpu_type::gpux_gpu_type,
  ALTER COLUMN zone TYPE gpux_zone USING zone::gpux_zone,
  ALTER COLUMN status TYPE gpux_lease_status USING status::gpux_lease_status;
CREATE INDEX leases_live ON leases (gpu_type, zone) WHERE status IN ('provisioning', 'active');

-- Fills had no rule on their book at all; now they have the same one.
ALTER TABLE fills
  ALTER COLUMN gpu_type TYPE gpux_gpu_type USING gpu_type::gpux_gpu_type,
  ALTER COLUMN zone TYPE gpux_zone USING zone::gpux_zone;

-- The outbox payload is `json`, not `jsonb`. It is written once, in the
-- order's transaction, and later only read back whole and published to NATS
-- as it is; nothing queries inside it. `jsonb` made PostgreSQL parse every
-- event into its binary form (sorting its keys) for nothing: about 4 % of the
-- backend's CPU in the same replay. `json` still checks that the text is
-- valid JSON, and keeps it as written.
ALTER TABLE outbox ALTER COLUMN payload TYPE json USING payload::json;
