// The fleet as the console shows it (issue 23, GET /v1/admin/fleet): every
// provider, its clusters and their nodes, with what the agents last
// reported, the open sells, the live leases and the provider's earnings per
// cluster. Clusters that need an operator (a node offline or stale) come
// first, then their providers.

import type { GpuType, Zone } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import type { CordonedBy } from '../market/cordon.js';
import { HEARTBEAT_WRITE_EVERY_MS } from '../providers/node-liveness.js';
/** An online node silent for this many of its agent's intervals is stale (offline at 3, D29). */
export const STALE_INTERVALS = 2;
/** The interval assumed for a cluster whose agent never said its own. */
const DEFAULT_HEARTBEAT_MS = 10_000;

export interface FleetGpu {
  readonly index: number;
  readonly model: string;
  readonly memory_mib: number;
  readonly utilization_percent: number;
  readonly temperature_c: number;
}

export interface FleetNode {
  readonly node_id: string;
  readonly hostname: string;
  readonly status: 'available' | 'online' | 'offline';
  readonly stale: boolean;
  readonly last_heartbeat_at: string | null;
  readonly heartbeat_age_seconds: number | null;
  readonly problem: string | null;
  readonly gpus: FleetGpu[];
}

export interface Earnings {
  readonly day: number;
  readonly week: number;
  readonly all: number;
}

export interface FleetCluster {
  readonly cluster_id: string;
  readonly gpu_type: GpuType;
  readonly zone: Zone;
  readonly cordoned_at: string | null;
  readonly cordoned_by: CordonedBy | null;
  readonly agent_attached_at: string | null;
  readonly agent_version: string | null;
  readonly provisioner: string | null;
  readonly heartbeat_seconds: number | null;
  readonly attention: boolean;
  readonly nodes_online: number;
  readonly nodes_offline: number;
  readonly nodes_stale: number;
  readonly open_sells: number;
  readonly open_sell_gpus: number;
  readonly leases_provisioning: number;
  readonly leases_active: number;
  readonly earnings: Earnings;
  readonly nodes: FleetNode[];
}

export interface FleetProvider {
  readonly account_id: string;
  readonly name: string;
  readonly suspended: boolean;
  readonly attention: boolean;
  readonly earnings: Earnings;
  readonly clusters: FleetCluster[];
}

interface ClusterRow {
  id: string;
  provider_account_id: string;
  provider_name: string;
  suspended: boolean;
  gpu_type: GpuType;
  zone: Zone;
  cordoned_at: Date | null;
  cordoned_by: CordonedBy | null;
  agent_attached_at: Date | null;
  agent_version: string | null;
  provisioner: string | null;
  heartbeat_ms: number | null;
  open_sells: number;
  open_sell_nodes: number;
  provisioning: number;
  active: number;
  day: string;
  week: string;
  total: string;
}

const CLUSTERS = `
SELECT c.id, c.provider_account_id, a.name AS provider_name, a.suspended_at IS NOT NULL AS suspended,
       c.gpu_type, c.zone, c.cordoned_at, c.cordoned_by, c.agent_attached_at, c.agent_version, c.provisioner,
       c.heartbeat_ms,
       COALESCE(s.n, 0)::int AS open_sells, COALESCE(s.nodes, 0)::int AS open_sell_nodes,
       COALESCE(l.provisioning, 0)::int AS provisioning, COALESCE(l.active, 0)::int AS active,
       COALESCE(e.day, 0)::text AS day, COALESCE(e.week, 0)::text AS week,
       COALESCE(e.total, 0)::text AS total
  FROM clusters c
  JOIN accounts a ON a.id = c.provider_account_id
  LEFT JOIN (SELECT cluster_id, count(*) AS n, sum(remaining_nodes) AS nodes FROM orders
              WHERE side = 'sell' AND book_state IS NOT NULL AND cluster_id IS NOT NULL
              GROUP BY cluster_id) s ON s.cluster_id = c.id
  LEFT JOIN (SELECT cluster_id,
                    count(*) FILTER (WHERE status = 'provisioning') AS provisioning,
                    count(*) FILTER (WHERE status = 'active') AS active
               FROM leases WHERE status IN ('provisioning', 'active')
              GROUP BY cluster_id) l ON l.cluster_id = c.id
  LEFT JOIN (SELECT l.cluster_id,
                    sum(e.amount_cents) FILTER (WHERE e.created_at > now() - interval '24 hours') AS day,
                    sum(e.amount_cents) FILTER (WHERE e.created_at > now() - interval '7 days') AS week,
                    sum(e.amount_cents) AS total
               FROM leases l
               JOIN clusters lc ON lc.id = l.cluster_id
               JOIN ledger_transactions t ON t.lease_id = l.id
               JOIN ledger_entries e ON e.transaction_id = t.id AND e.account_id = lc.provider_account_id
              GROUP BY l.cluster_id) e ON e.cluster_id = c.id
 WHERE $1::text IS NULL OR c.provider_account_id = $1
 ORDER BY c.created_at, c.id`;

interface NodeRow {
  id: string;
  cluster_id: string;
  hostname: string;
  status: FleetNode['status'];
  last_heartbeat_at: Date | null;
  problem: string | null;
  gpus: unknown;
}

/** The GPUs of a heartbeat as stored (providers/node-liveness.ts GpuFacts). */
function gpusOf(stored: unknown): FleetGpu[] {
  const list: unknown = typeof stored === 'string' ? JSON.parse(stored) : stored;
  if (!Array.isArray(list)) return [];
  return list.map((g: Record<string, unknown>, i) => ({
    index: typeof g['index'] === 'number' ? g['index'] : i,
    model: typeof g['name'] === 'string' ? g['name'] : '',
    memory_mib: Number(g['memoryTotalMib'] ?? 0),
    utilization_percent: Number(g['utilizationPercent'] ?? 0),
    temperature_c: Number(g['temperatureC'] ?? 0),
  }));
}

const dollars = (cents: string): number => Number(cents) / 100;
const iso = (d: Date | null): string | null => (d === null ? null : d.toISOString());

function sum(list: readonly Earnings[]): Earnings {
  return list.reduce(
    (a, e) => ({ day: a.day + e.day, week: a.week + e.week, all: a.all + e.all }),
    { day: 0, week: 0, all: 0 },
  );
}

/** Rounded to cents after adding (no float drift in a sum of dollars). */
const cents = (e: Earnings): Earnings => ({
  day: Math.round(e.day * 100) / 100,
  week: Math.round(e.week * 100) / 100,
  all: Math.round(e.all * 100) / 100,
});

/** Every provider's fleet, or with `providerId` that provider's own (GET /v1/clusters). */
export async function fleetOf(
  q: Queryable,
  nowMs: number,
  providerId: string | null = null,
): Promise<FleetProvider[]> {
  const [clusters, nodes] = await Promise.all([
    q.query<ClusterRow>(CLUSTERS, [providerId]),
    q.query<NodeRow>(
      `SELECT n.id, n.cluster_id, n.hostname, n.status, n.last_heartbeat_at, n.problem, n.gpus
         FROM nodes n JOIN clusters c ON c.id = n.cluster_id
        WHERE $1::text IS NULL OR c.provider_account_id = $1
        ORDER BY n.hostname`,
      [providerId],
    ),
  ]);
  const byCluster = new Map<string, NodeRow[]>();
  for (const n of nodes) byCluster.set(n.cluster_id, [...(byCluster.get(n.cluster_id) ?? []), n]);

  const providers = new Map<string, FleetProvider & { clusters: FleetCluster[] }>();
  for (const c of clusters) {
    const intervalMs = c.heartbeat_ms ?? DEFAULT_HEARTBEAT_MS;
    const fleetNodes = (byCluster.get(c.id) ?? []).map((n): FleetNode => {
      const age =
        n.last_heartbeat_at === null
          ? null
          : Math.max(0, Math.round((nowMs - n.last_heartbeat_at.getTime()) / 1000));
      // last_heartbeat_at is written at least every HEARTBEAT_WRITE_EVERY_MS,
      // not at each heartbeat (providers/node-liveness.ts): a node is stale
      // once its record is older than that plus 2 of its agent's intervals.
      const stale =
        n.status === 'online' &&
        age !== null &&
        age * 1000 > HEARTBEAT_WRITE_EVERY_MS + STALE_INTERVALS * intervalMs;
      return {
        node_id: n.id,
        hostname: n.hostname,
        status: n.status,
        stale,
        last_heartbeat_at: iso(n.last_heartbeat_at),
        heartbeat_age_seconds: age,
        problem: n.problem,
        gpus: gpusOf(n.gpus),
      };
    });
    // Offline and stale nodes first, then by hostname (kept from the query).
    fleetNodes.sort((a, b) => rank(a) - rank(b));
    const offline = fleetNodes.filter((n) => n.status === 'offline').length;
    const stale = fleetNodes.filter((n) => n.stale).length;
    const cluster: FleetCluster = {
      cluster_id: c.id,
      gpu_type: c.gpu_type,
      zone: c.zone,
      cordoned_at: iso(c.cordoned_at),
      cordoned_by: c.cordoned_by,
      agent_attached_at: iso(c.agent_attached_at),
      agent_version: c.agent_version,
      provisioner: c.provisioner,
      heartbeat_seconds: c.heartbeat_ms === null ? null : c.heartbeat_ms / 1000,
      attention: offline + stale > 0,
      nodes_online: fleetNodes.filter((n) => n.status === 'online').length,
      nodes_offline: offline,
      nodes_stale: stale,
      open_sells: c.open_sells,
      open_sell_gpus: c.open_sell_nodes * 8,
      leases_provisioning: c.provisioning,
      leases_active: c.active,
      earnings: { day: dollars(c.day), week: dollars(c.week), all: dollars(c.total) },
      nodes: fleetNodes,
    };
    const p = providers.get(c.provider_account_id) ?? {
      account_id: c.provider_account_id,
      name: c.provider_name,
      suspended: c.suspended,
      attention: false,
      earnings: { day: 0, week: 0, all: 0 },
      clusters: [],
    };
    p.clusters.push(cluster);
    providers.set(c.provider_account_id, p);
  }
  const list = [...providers.values()].map((p) => {
    const clustersFirst = [...p.clusters].sort((a, b) => Number(b.attention) - Number(a.attention));
    return {
      ...p,
      attention: clustersFirst.some((c) => c.attention),
      earnings: cents(sum(clustersFirst.map((c) => c.earnings))),
      clusters: clustersFirst,
    };
  });
  // Stable: providers otherwise keep the order of their first cluster.
  return list.sort((a, b) => Number(b.attention) - Number(a.attention));
}

function rank(n: FleetNode): number {
  if (n.status === 'offline') return 0;
  if (n.stale) return 1;
  return 2;
}

export interface StatusChange {
  readonly at: string;
  readonly node_id: string | null;
  readonly hostname: string | null;
  readonly field: 'status' | 'cordon' | 'agent';
  readonly before: string | null;
  readonly after: string | null;
}

/** A cluster's history of status changes, newest first (migrations/0021's triggers). */
export async function clusterHistory(
  q: Queryable,
  clusterId: string,
  limit: number,
  offset: number,
): Promise<{ total: number; changes: StatusChange[] }> {
  const [rows, [count]] = await Promise.all([
    q.query<{
      at: Date;
      node_id: string | null;
      hostname: string | null;
      field: StatusChange['field'];
      before: string | null;
      after: string | null;
    }>(
      `SELECT h.at, h.node_id, n.hostname, h.field, h.before, h.after
         FROM node_status_changes h LEFT JOIN nodes n ON n.id = h.node_id
        WHERE h.cluster_id = $1 ORDER BY h.id DESC LIMIT $2 OFFSET $3`,
      [clusterId, limit, offset],
    ),
    q.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM node_status_changes WHERE cluster_id = $1',
      [clusterId],
    ),
  ]);
  return {
    total: count?.n ?? 0,
    changes: rows.map((r) => ({
      at: r.at.toISOString(),
      node_id: r.node_id,
      hostname: r.hostname,
      field: r.field,
      before: r.before,
      after: r.after,
    })),
  };
}
