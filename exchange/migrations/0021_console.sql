-- The operators' web console (issue 23, docs/console.md).

-- A console sign-in: an operator token exchanged for a session cookie. Kept
-- here, not in a process, so any exchange process checks it. Only a hash of
-- the session id is stored (a copy of this table opens no session). The
-- token is checked again on every request: token_id names the account
-- token signed in with (revoked or suspended: the session ends); for the
-- admin token (token_id NULL), admin_proof is HMAC-SHA256(session id, token),
-- so a changed GPUX_ADMIN_TOKEN ends its sessions and the table alone does
-- not let anyone test guesses of the token.
CREATE TABLE console_sessions (
  id_hash bytea PRIMARY KEY,
  actor text NOT NULL CHECK (actor <> ''),
  token_id text REFERENCES api_tokens (id),
  admin_proof bytea,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  CHECK ((token_id IS NULL) = (admin_proof IS NOT NULL))
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- The history of a cluster (GET /v1/admin/clusters/{id}/history): every
-- change of a node's status, and of the cluster's cordon and agent, written
-- by triggers whoever makes the change (the book writer, the admin API).
-- node_id NULL: a change of the cluster itself.
CREATE TABLE node_status_changes (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  cluster_id text NOT NULL,
  node_id text,
  field text NOT NULL CHECK (field IN ('status', 'cordon', 'agent')),
  before text,
  after text
);
CREATE INDEX node_status_changes_cluster ON node_status_changes (cluster_id, id DESC);

CREATE FUNCTION node_status_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO node_status_changes (cluster_id, node_id, field, before, after)
    VALUES (NEW.cluster_id, NEW.id, 'status', OLD.status, NEW.status);
  RETURN NULL;
END;
$$;

-- Heartbeats update nodes all the time; only a change of status is kept.
CREATE TRIGGER node_status_changed
  AFTER UPDATE OF status ON nodes
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION node_status_changed();

CREATE FUNCTION cluster_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.cordoned_at IS DISTINCT FROM NEW.cordoned_at THEN
    INSERT INTO node_status_changes (cluster_id, field, before, after)
      VALUES (NEW.id, 'cordon',
        CASE WHEN OLD.cordoned_at IS NULL THEN 'uncordoned' ELSE 'cordoned' END,
        CASE WHEN NEW.cordoned_at IS NULL THEN 'uncordoned' ELSE 'cordoned' END);
  END IF;
  IF OLD.agent_attached_at IS DISTINCT FROM NEW.agent_attached_at
     OR OLD.agent_version IS DISTINCT FROM NEW.agent_version THEN
    INSERT INTO node_status_changes (cluster_id, field, before, after)
      VALUES (NEW.id, 'agent', OLD.agent_version, NEW.agent_version);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER cluster_changed
  AFTER UPDATE OF cordoned_at, agent_attached_at, agent_version ON clusters
  FOR EACH ROW EXECUTE FUNCTION cluster_changed();

-- Why an agent could not provision a lease (D25): the lease fails on the
-- order path; the agent's reason is kept here for the console's Leases page.
CREATE TABLE lease_failures (
  lease_id text PRIMARY KEY,
  reason text NOT NULL,
  reported_ms bigint NOT NULL
);
