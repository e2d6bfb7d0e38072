// Attach (D29, D31). Nodes made by the admin API are `available` until an
// agent attaches; from then on they follow its heartbeats: a node reported
// healthy is `online`, one reported unhealthy or silent for 3 of the
// agent's declared intervals is `offline` (node-liveness.ts, agent-front.ts).
// Status changes go through the cluster's book (node-status.ts), which
// withdraws the sells that no longer fit; the heartbeats' own facts (time,
// GPU inventory, problem) are written in batches, they carry no money.

import type { Principal } from '../accounts/accounts.js';
import type { AgentEventSource } from '../events/publisher.js';
import { runtimeOf } from './agent-runtime.js';
import { SILENT_INTERVALS } from './node-liveness.js';
import type { NodeStatus, NodeView } from './node-status.js';
import { checkId, invalid, ownCluster } from './provider-context.js';
import type { ClusterRow, ProviderContext } from './provider-context.js';

export type { NodeView };

export interface AttachInput {
  readonly clusterId: string;
  readonly heartbeatIntervalSeconds: number;
  readonly agentVersion: string;
  readonly provisioner: string;
  readonly host: Record<string, unknown> | undefined;
}

export interface Attached {
  readonly cluster: ClusterRow;
  readonly nodes: readonly NodeView[];
  readonly events: AgentEventSource;
  readonly offlineAfterSeconds: number;
}

export async function attach(
  ctx: ProviderContext,
  caller: Principal,
  a: AttachInput,
): Promise<Attached> {
  const cluster = await ownCluster(ctx, caller, a.clusterId);
  const seconds = a.heartbeatIntervalSeconds;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 300) {
    throw invalid('heartbeat_interval_seconds must be 1 to 300');
  }
  if (a.provisioner !== 'simulated' && a.provisioner !== 'kubernetes') {
    throw invalid('provisioner must be "simulated" or "kubernetes"');
  }
  const now = ctx.market.clock.now();
  await ctx.db.transaction(async (tx) => {
    await tx.query(
      `UPDATE clusters SET agent_attached_at = to_timestamp($2::double precision / 1000),
              heartbeat_ms = $3, agent_version = $4, provisioner = $5, agent_host = $6
        WHERE id = $1`,
      [
        cluster.id,
        now,
        seconds * 1000,
        a.agentVersion,
        a.provisioner,
        JSON.stringify(a.host ?? null),
      ],
    );
    // Silence is counted from the attach until the first heartbeat (for
    // operators; the service counts it in memory, agent-front.ts). Rows
    // in id order, as every writer of node rows locks them.
    await tx.query(
      `UPDATE nodes SET last_heartbeat_at = to_timestamp($2::double precision / 1000)
        WHERE id IN (SELECT id FROM nodes WHERE cluster_id = $1 ORDER BY id FOR UPDATE)`,
      [cluster.id, now],
    );
  });
  runtimeOf(ctx).clusters.attached(cluster.id, seconds * 1000);
  const events = await ctx.publisher.ensureAgentConsumer(cluster.id);
  ctx.logger.info(
    {
      cluster: cluster.id,
      heartbeatSeconds: seconds,
      provisioner: a.provisioner,
      version: a.agentVersion,
    },
    'agent attached',
  );
  return {
    cluster: { ...cluster, heartbeat_ms: seconds * 1000 },
    nodes: await nodesOf(ctx, cluster.id),
    events,
    offlineAfterSeconds: SILENT_INTERVALS * seconds,
  };
}

/** The cluster's nodes with their status and the live lease on each. */
export async function nodesOf(ctx: ProviderContext, clusterId: string): Promise<NodeView[]> {
  checkId(clusterId, 'cluster_id');
  const rows = await ctx.db.query<{
    id: string;
    hostname: string;
    status: NodeStatus;
    lease_id: string | null;
  }>(
    `SELECT n.id, n.hostname, n.status, l.id AS lease_id
       FROM nodes n
       LEFT JOIN lease_nodes ln ON ln.node_id = n.id
        AND ln.lease_id IN (SELECT id FROM leases WHERE cluster_id = $1 AND status IN ('provisioning', 'active'))
       LEFT JOIN leases l ON l.id = ln.lease_id
      WHERE n.cluster_id = $1 ORDER BY n.hostname`,
    [clusterId],
  );
  return rows.map((r) => ({
    nodeId: r.id,
    hostname: r.hostname,
    status: r.status,
    leaseId: r.lease_id ?? undefined,
  }));
}
