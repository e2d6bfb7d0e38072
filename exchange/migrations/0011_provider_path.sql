-- The provider path (D25-D32): what the agents report and what the
-- exchange needs to hand each lease to its cluster's agent.

-- D32: the buyer's SSH public keys of the moment of the fill, copied by the
-- fill's own write batch (change-set.ts). Written on the order path, so no
-- foreign keys (migration 0006).
CREATE TABLE lease_keys (
  lease_id text NOT NULL,
  position integer NOT NULL,
  public_key text NOT NULL,
  PRIMARY KEY (lease_id, position)
);

-- D29: what the agent declared at attach, and what its heartbeats say of
-- each node (for operators: GET /v1/admin/clusters).
ALTER TABLE clusters
  ADD COLUMN heartbeat_ms integer CHECK (heartbeat_ms BETWEEN 1000 AND 300000),
  ADD COLUMN agent_version text,
  ADD COLUMN provisioner text,
  ADD COLUMN agent_host jsonb;
ALTER TABLE nodes
  ADD COLUMN gpus jsonb,
  ADD COLUMN problem text;

-- D28, D32: the access the agent reported for a lease. The kubeconfig is
-- stored encrypted (AES-256-GCM, leases/secret-box.ts); the lease id is its
-- additional data, so a ciphertext moved to another lease does not open.
CREATE TABLE lease_access (
  lease_id text PRIMARY KEY,
  ssh_endpoints jsonb NOT NULL,
  ssh_host_keys jsonb NOT NULL,
  kubeconfig_sealed bytea,
  reported_ms bigint NOT NULL,
  revoked_ms bigint
);

-- The agent's reconciliation lists its cluster's live leases (D30).
CREATE INDEX leases_live_cluster ON leases (cluster_id) WHERE status IN ('provisioning', 'active');
