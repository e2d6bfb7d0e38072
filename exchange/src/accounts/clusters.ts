// Provider clusters and their nodes, created by operators (D31).

import { fieldError, newId } from '@gpux/shared';
import type { GpuType, Zone } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import type { CordonedBy } from '../market/cordon.js';

export interface NewCluster {
  readonly providerAccountId: string;
  readonly gpuType: GpuType;
  readonly zone: Zone;
  readonly hostnames: readonly string[];
}

export interface NodeView {
  readonly nodeId: string;
  readonly hostname: string;
  readonly status: 'available' | 'online' | 'offline';
  readonly lastHeartbeatAt: Date | null;
}

export interface ClusterView {
  readonly clusterId: string;
  readonly providerAccountId: string;
  readonly gpuType: GpuType;
  readonly zone: Zone;
  readonly createdAt: Date;
  /** When it was cordoned (market/cordon.ts); null when not cordoned. */
  readonly cordonedAt: Date | null;
  /** Who holds the cordon (migrations/0022); null when not cordoned. */
  readonly cordonedBy: CordonedBy | null;
  readonly nodes: readonly NodeView[];
}

export async function createCluster(tx: Queryable, c: NewCluster): Promise<ClusterView> {
  if (new Set(c.hostnames).size !== c.hostnames.length) {
    throw fieldError(
      'nodes',
      'unique_items',
      'nodes must name each hostname once (host names are compared without case)',
    );
  }
  const [provider] = await tx.query('SELECT 1 FROM accounts WHERE id = $1', [c.providerAccountId]);
  if (provider === undefined) {
    throw fieldError(
      'provider_account_id',
      'invalid',
      `provider_account_id: no account ${c.providerAccountId}`,
    );
  }
  const clusterId = newId('cls_');
  const [row] = await tx.query<{ created_at: Date }>(
    'INSERT INTO clusters (id, provider_account_id, gpu_type, zone) VALUES ($1, $2, $3, $4) RETURNING created_at',
    [clusterId, c.providerAccountId, c.gpuType, c.zone],
  );
  const nodes: NodeView[] = [];
  for (const hostname of c.hostnames) {
    const nodeId = newId('nod_');
    await tx.query('INSERT INTO nodes (id, cluster_id, hostname) VALUES ($1, $2, $3)', [
      nodeId,
      clusterId,
      hostname,
    ]);
    nodes.push({ nodeId, hostname, status: 'available', lastHeartbeatAt: null });
  }
  return {
    clusterId,
    providerAccountId: c.providerAccountId,
    gpuType: c.gpuType,
    zone: c.zone,
    createdAt: row?.created_at ?? new Date(),
    cordonedAt: null,
    cordonedBy: null,
    nodes,
  };
}

/** Every cluster (or the one named) with its nodes, oldest first, nodes by hostname. */
export async function listClusters(q: Queryable, clusterId?: string): Promise<ClusterView[]> {
  const id = clusterId ?? null;
  const clusters = await q.query<{
    id: string;
    provider_account_id: string;
    gpu_type: GpuType;
    zone: Zone;
    created_at: Date;
    cordoned_at: Date | null;
    cordoned_by: CordonedBy | null;
  }>(
    `SELECT id, provider_account_id, gpu_type, zone, created_at, cordoned_at, cordoned_by FROM clusters
      WHERE $1::text IS NULL OR id = $1 ORDER BY created_at, id`,
    [id],
  );
  const nodes = await q.query<{
    id: string;
    cluster_id: string;
    hostname: string;
    status: NodeView['status'];
    last_heartbeat_at: Date | null;
  }>(
    `SELECT id, cluster_id, hostname, status, last_heartbeat_at FROM nodes
      WHERE $1::text IS NULL OR cluster_id = $1 ORDER BY hostname`,
    [id],
  );
  const byCluster = new Map<string, NodeView[]>();
  for (const n of nodes) {
    const list = byCluster.get(n.cluster_id) ?? [];
    list.push({
      nodeId: n.id,
      hostname: n.hostname,
      status: n.status,
      lastHeartbeatAt: n.last_heartbeat_at,
    });
    byCluster.set(n.cluster_id, list);
  }
  return clusters.map((c) => ({
    clusterId: c.id,
    providerAccountId: c.provider_account_id,
    gpuType: c.gpu_type,
    zone: c.zone,
    createdAt: c.created_at,
    cordonedAt: c.cordoned_at,
    cordonedBy: c.cordoned_by,
    nodes: byCluster.get(c.id) ?? [],
  }));
}
