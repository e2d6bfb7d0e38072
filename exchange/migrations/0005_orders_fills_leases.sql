-- Orders, fills, leases, the outbox and idempotency keys (issue 3).
-- Times the matching engine works with are integer milliseconds since the
-- epoch in bigint columns (*_ms): exact, and what the engine is rebuilt from.
-- Money is integer cents (D1).

CREATE TABLE orders (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  organization_id text NOT NULL REFERENCES organizations (id),
  side text NOT NULL CHECK (side IN ('buy', 'sell')),
  order_type text NOT NULL CHECK (order_type IN ('market', 'limit')),
  gpu_type text NOT NULL CHECK (gpu_type IN ('h100', 'h200', 'b200', 'b300')),
  zone text NOT NULL CHECK (zone IN ('us-west-1', 'us-east-1', 'eu-west-1')),
  gpu_count integer NOT NULL CHECK (gpu_count > 0 AND gpu_count % 8 = 0),
  duration_hours integer NOT NULL CHECK (duration_hours BETWEEN 1 AND 720),
  limit_price_cents bigint CHECK (limit_price_cents > 0),
  allow_partial boolean NOT NULL,
  -- start_time as given (D13); the creation time when none was given.
  start_ms bigint NOT NULL,
  flexible_window_hours integer CHECK (flexible_window_hours BETWEEN 1 AND 720),
  -- An explicit expiry handed to the book (a resale's available_until, D27).
  expires_input_ms bigint,
  -- Sells: the cluster whose nodes are offered (D6, D31).
  cluster_id text REFERENCES clusters (id),
  -- Resell orders: the lease sold (D27).
  resale_lease_id text,
  transfer_immediately boolean,
  status text NOT NULL CHECK (status IN ('pending', 'partial', 'filled', 'cancelled')),
  filled_gpus integer NOT NULL CHECK (filled_gpus >= 0),
  cancelled_gpus integer NOT NULL CHECK (cancelled_gpus >= 0),
  cancel_reason text,
  -- D14: the reference price of a flexible buy without a limit price.
  reference_price_cents bigint,
  created_ms bigint NOT NULL,
  filled_ms bigint,
  cancelled_ms bigint,
  -- The book's own view of an open order (engine OpenOrder); NULL once the
  -- order is closed. A restart rebuilds every book from these columns.
  book_state text CHECK (book_state IN ('resting', 'scheduled', 'unseen')),
  remaining_nodes integer,
  seq bigint,
  accept_seq bigint,
  accepted_ms bigint,
  arrive_ms bigint,
  -- NULL: never.
  expires_ms bigint,
  rest_price_cents bigint,
  CHECK (filled_gpus + cancelled_gpus <= gpu_count),
  CHECK ((book_state IS NULL) = (remaining_nodes IS NULL))
);
CREATE INDEX orders_account ON orders (account_id, created_ms DESC, id DESC);
CREATE INDEX orders_open ON orders (gpu_type, zone) WHERE book_state IS NOT NULL;
CREATE INDEX orders_resale ON orders (resale_lease_id) WHERE resale_lease_id IS NOT NULL;

CREATE TABLE leases (
  id text PRIMARY KEY,
  -- The buyer (spec customer_id).
  account_id text NOT NULL REFERENCES accounts (id),
  organization_id text NOT NULL REFERENCES organizations (id),
  buy_order_id text NOT NULL REFERENCES orders (id),
  -- Who was paid for the lease: the provider, or a reseller (D27).
  seller_account_id text NOT NULL REFERENCES accounts (id),
  cluster_id text NOT NULL REFERENCES clusters (id),
  gpu_type text NOT NULL,
  zone text NOT NULL,
  gpu_count integer NOT NULL CHECK (gpu_count > 0 AND gpu_count % 8 = 0),
  -- Σ price × gpus of the lease's fills: cents per hour for the whole lease.
  -- rate = hourly_cents / gpu_count (D4); refunds use hourly_cents exactly.
  hourly_cents bigint NOT NULL CHECK (hourly_cents > 0),
  compute_cents bigint NOT NULL,
  fee_cents bigint NOT NULL,
  start_ms bigint NOT NULL,
  end_ms bigint NOT NULL CHECK (end_ms > start_ms),
  created_ms bigint NOT NULL,
  status text NOT NULL
    CHECK (status IN ('provisioning', 'active', 'terminated', 'expired', 'failed')),
  -- When it stopped: terminated, expired, failed or sold on (D25-D27).
  ended_ms bigint,
  -- terminated | resold | expired | failed
  end_reason text,
  refund_cents bigint,
  -- A lease bought on the resale market: the lease whose nodes it took over.
  source_lease_id text REFERENCES leases (id),
  ready_ms bigint
);
CREATE INDEX leases_account ON leases (account_id, created_ms DESC, id DESC);
CREATE INDEX leases_live ON leases (gpu_type, zone) WHERE status IN ('provisioning', 'active');

CREATE TABLE lease_nodes (
  lease_id text NOT NULL REFERENCES leases (id),
  node_id text NOT NULL REFERENCES nodes (id),
  hostname text NOT NULL,
  PRIMARY KEY (lease_id, node_id)
);

-- One row per fill: one buy meeting one sell at the sell's price (D7).
CREATE TABLE fills (
  id text PRIMARY KEY,
  gpu_type text NOT NULL,
  zone text NOT NULL,
  buy_order_id text NOT NULL REFERENCES orders (id),
  sell_order_id text NOT NULL REFERENCES orders (id),
  lease_id text NOT NULL REFERENCES leases (id),
  gpus integer NOT NULL CHECK (gpus > 0),
  price_cents bigint NOT NULL CHECK (price_cents > 0),
  -- The buyer's lease hours: the fill is worth price × gpus × hours.
  hours integer NOT NULL CHECK (hours BETWEEN 1 AND 720),
  at_ms bigint NOT NULL,
  -- Order of the fills inside the book (ties of at_ms).
  book_seq bigint NOT NULL
);
CREATE INDEX fills_book ON fills (gpu_type, zone, at_ms DESC, book_seq DESC);
CREATE INDEX fills_buy ON fills (buy_order_id);
CREATE INDEX fills_sell ON fills (sell_order_id);

-- Events for NATS, written in the same transaction as the change they report
-- (the outbox pattern); a relay publishes and marks them.
CREATE TABLE outbox (
  seq bigserial PRIMARY KEY,
  event_id text NOT NULL UNIQUE,
  subject text NOT NULL,
  payload jsonb NOT NULL,
  created_ms bigint NOT NULL,
  published_ms bigint
);
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_ms IS NULL;

-- D23: Idempotency-Key per account, kept 24 h.
CREATE TABLE idempotency_keys (
  account_id text NOT NULL REFERENCES accounts (id),
  key text NOT NULL,
  request_hash bytea NOT NULL,
  -- NULL while the first request runs.
  status_code integer,
  response_body text,
  created_ms bigint NOT NULL,
  PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_ms);
