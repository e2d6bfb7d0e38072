-- Each account's own events (issue 22, docs/api/account-events.md): what
-- GET /v1/account/stream sends and webhooks deliver.
--
-- An event is written by the statement or transaction that makes the change
-- it reports (a book's write batch, market/change-set.ts; an operator's
-- adjustment; an agent's refreshed kubeconfig), so it is committed with the
-- change or not at all, and nothing is lost across a restart.
--
-- Numbering: one counter row per account (account_event_heads), advanced by
-- the same statement by as many events as it writes for that account, the
-- events numbered from the old value + 1. The row lock serializes only the
-- writers of one account, until their commit: a later number is never
-- visible before an earlier one, so a reader that has seen n has seen
-- everything up to n. The platform's own accounts get no events (they are
-- in every fill: their counter would be one row every batch waits on).
CREATE TABLE account_event_heads (
  account_id text PRIMARY KEY,
  seq bigint NOT NULL CHECK (seq > 0)
);

CREATE TABLE account_events (
  account_id text NOT NULL,
  seq bigint NOT NULL,
  -- evt_…: the event's stable id (a webhook's Gpux-Event-Id).
  event_id text NOT NULL,
  kind text NOT NULL,
  payload json NOT NULL,
  created_ms bigint NOT NULL,
  PRIMARY KEY (account_id, seq)
);
-- The retention job deletes by age (retention.ts).
CREATE INDEX account_events_created ON account_events (created_ms);

-- Webhook endpoints (POST /v1/webhooks, docs/api/webhooks.md). The secret is
-- sealed at rest with the exchange's key, like kubeconfigs (leases/secret-box.ts),
-- and resealed by `exchange rekey`. cursor_seq: the last account event the
-- dispatcher turned into deliveries for the endpoint (the endpoint's
-- registration starts it at the account's head: no backfill).
CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  account_id text NOT NULL REFERENCES accounts (id),
  url text NOT NULL,
  kinds text[] NOT NULL,
  secret_sealed text NOT NULL,
  created_ms bigint NOT NULL,
  cursor_seq bigint NOT NULL,
  deleted_ms bigint
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_ms);

-- One delivery of one event to one endpoint, sent at least once: pending
-- until a 2xx (delivered) or until it has been retried for a day (failed).
-- seq is null for a test send.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  seq bigint,
  event_id text NOT NULL,
  kind text NOT NULL,
  payload json NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_ms bigint,
  created_ms bigint NOT NULL,
  finished_ms bigint
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_ms)
  WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_ms DESC, id);

CREATE TABLE webhook_attempts (
  delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  at_ms bigint NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  PRIMARY KEY (delivery_id, attempt)
);
