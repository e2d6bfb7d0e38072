// Attach, heartbeats and silence (D29, D31). Nodes made by the admin API are
// `available` until an agent attaches; from then on they follow its
// heartbeats: a node reported healthy is `online`, one reported unhealthy or
// silent for 3 of the agent's declared intervals is `offline`. Status
// changes go through the cluster's book (node-status.ts), which withdraws
// the sells that no longer fit; the heartbeat's own facts (time, GPU
// inventory, problem) are written in batches (heartbeat-recorder.ts), they
// carry no money. Every write of node rows here runs in the agents' lane of
// node writes (agent-runtime.ts).

import type { Principal } from '../accounts/accounts.js';
import type { AgentEventSource } from '../events/publisher.js';
import { checkCount } from './agent-input.js';
import { runtimeOf } from './agent-runtime.js';
import type { NodeFacts } from './heartbeat-recorder.js';
import { setStatus } from './node-status.js';
import type { NodeStatus, NodeView } from './node-status.js';
import { checkId, invalid, ownCluster, ownKnownCluster } from './provider-context.js';
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

/** D29: a node silent for this many of its agent's intervals is offline. */
export const SILENT_INTERVALS = 3;

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
  await runtimeOf(ctx).lane.run(() =>
    ctx.db.transaction(async (tx) => {
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
      // Silence is counted from the attach until the first heartbeat.
      await tx.query(
        `UPDATE nodes SET last_heartbeat_at = to_timestamp($2::double precision / 1000)
        WHERE id IN (SELECT id FROM nodes WHERE cluster_id = $1 ORDER BY id FOR UPDATE)`,
        [cluster.id, now],
      );
    }),
  );
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

export interface NodeReport {
  readonly hostname: string;
  readonly healthy: boolean;
  readonly problem: string;
  readonly gpus: readonly Record<string, unknown>[];
}

export async function heartbeat(
  ctx: ProviderContext,
  caller: Principal,
  clusterId: string,
  reports: readonly NodeReport[],
): Promise<readonly NodeView[]> {
  const { row: cluster, nodes } = await ownKnownCluster(ctx, caller, clusterId);
  if (cluster.heartbeat_ms === null) throw invalid(`attach to cluster ${clusterId} first`);
  // The sizes of every field were checked before (agent-input.ts); what
  // only the cluster can say is checked here, before anything is written.
  checkCount(reports, 'nodes', nodes.size, `cluster ${clusterId} has ${nodes.size} nodes`);
  const facts: NodeFacts[] = [];
  const listed = new Set<string>();
  reports.forEach((r, i) => {
    const node = nodes.get(r.hostname.toLowerCase());
    if (node === undefined)
      throw invalid(`nodes[${i}].hostname: cluster ${clusterId} has no node ${r.hostname}`);
    if (listed.has(node.id))
      throw invalid(`nodes[${i}].hostname: ${node.hostname} is listed twice; each node once`);
    listed.add(node.id);
    facts.push({
      id: node.id,
      gpus: r.gpus,
      problem: r.healthy ? null : r.problem || 'unhealthy',
      status: r.healthy ? 'online' : 'offline',
    });
  });
  return runtimeOf(ctx).heartbeats.record(ctx, cluster, ctx.market.clock.now(), facts);
}

/** D29: nodes of attached clusters whose agent fell silent go offline. Returns how many. */
export function sweepSilentNodes(ctx: ProviderContext): Promise<number> {
  // In the lane: a heartbeat written just before is seen, none is written meanwhile.
  return runtimeOf(ctx).lane.run(() => sweep(ctx));
}

async function sweep(ctx: ProviderContext): Promise<number> {
  const silent = await ctx.db.query<{
    id: string;
    cluster_id: string;
    gpu_type: ClusterRow['gpu_type'];
    zone: ClusterRow['zone'];
  }>(
    `SELECT n.id, n.cluster_id, c.gpu_type, c.zone FROM nodes n JOIN clusters c ON c.id = n.cluster_id
      WHERE c.heartbeat_ms IS NOT NULL AND n.status <> 'offline'
        AND n.last_heartbeat_at < to_timestamp(($1::double precision - $2 * c.heartbeat_ms) / 1000)`,
    [ctx.market.clock.now(), SILENT_INTERVALS],
  );
  const byCluster = new Map<
    string,
    { cluster: Pick<ClusterRow, 'id' | 'gpu_type' | 'zone'>; nodes: Map<string, NodeStatus> }
  >();
  for (const n of silent) {
    let entry = byCluster.get(n.cluster_id);
    if (entry === undefined) {
      entry = {
        cluster: { id: n.cluster_id, gpu_type: n.gpu_type, zone: n.zone },
        nodes: new Map(),
      };
      byCluster.set(n.cluster_id, entry);
    }
    entry.nodes.set(n.id, 'offline');
  }
  for (const { cluster, nodes } of byCluster.values()) {
    ctx.logger.warn({ cluster: cluster.id, nodes: nodes.size }, 'agent silent: nodes offline');
    await setStatus(ctx, cluster, nodes);
  }
  return silent.length;
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
