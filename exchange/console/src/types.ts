// What the console reads, as docs/api/openapi.json describes it (the parts it shows).

export interface Session {
  actor: string;
  token_id: string | null;
  expires_at: string;
  csrf_token: string;
}

export interface FleetGpu {
  index: number;
  model: string;
  memory_mib: number;
  utilization_percent: number;
  temperature_c: number;
}

export interface FleetNode {
  node_id: string;
  hostname: string;
  status: 'available' | 'online' | 'offline';
  stale: boolean;
  heartbeat_age_seconds: number | null;
  problem: string | null;
  gpus: FleetGpu[];
}

export interface Earnings {
  day: number;
  week: number;
  all: number;
}

export interface FleetCluster {
  cluster_id: string;
  gpu_type: string;
  zone: string;
  cordoned_at: string | null;
  /** Who holds the cordon: an operator's outranks the provider's own. */
  cordoned_by: 'operator' | 'provider' | null;
  agent_version: string | null;
  provisioner: string | null;
  heartbeat_seconds: number | null;
  attention: boolean;
  nodes_online: number;
  nodes_offline: number;
  nodes_stale: number;
  open_sells: number;
  open_sell_gpus: number;
  leases_provisioning: number;
  leases_active: number;
  earnings: Earnings;
  nodes: FleetNode[];
}

export interface FleetProvider {
  account_id: string;
  name: string;
  suspended: boolean;
  attention: boolean;
  earnings: Earnings;
  clusters: FleetCluster[];
}

export interface Fleet {
  at: string;
  providers: FleetProvider[];
}

export interface LeaseCounts {
  provisioning: number;
  active: number;
  ended: number;
  failed: number;
  last_end: string;
}
