-- Provider clusters and their nodes (D31, D29). Every node is one 8-GPU
-- machine (spec rule 4).

CREATE TABLE clusters (
  id text PRIMARY KEY,
  provider_account_id text NOT NULL REFERENCES accounts (id),
  gpu_type text NOT NULL CHECK (gpu_type IN ('h100', 'h200', 'b200', 'b300')),
  zone text NOT NULL CHECK (zone IN ('us-west-1', 'us-east-1', 'eu-west-1')),
  -- Set when an agent first attaches; until then nodes stay 'available' (D31).
  agent_attached_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX clusters_provider ON clusters (provider_account_id);

CREATE TABLE nodes (
  id text PRIMARY KEY,
  cluster_id text NOT NULL REFERENCES clusters (id),
  hostname text NOT NULL,
  -- available: no agent yet; online / offline: by heartbeats (D29).
  status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'online', 'offline')),
  last_heartbeat_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (cluster_id, hostname)
);
