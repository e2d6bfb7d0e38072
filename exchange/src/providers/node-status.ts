// D29: a node's status changes only through its cluster's book
// (BookState.setNodeStatus), which keeps capacity right and withdraws the
// sells that no longer fit (D31). Heartbeats and the sweep of silent nodes
// both come here.

import type { NodeState } from '../market/capacity.js';
import type { ClusterRow, ProviderContext } from './provider-context.js';

export type NodeStatus = NodeState['status'];

export interface NodeView {
  readonly nodeId: string;
  readonly hostname: string;
  readonly status: NodeStatus;
  /** The live lease on it, if any. */
  readonly leaseId: string | undefined;
}

export async function setStatus(
  ctx: ProviderContext,
  cluster: Pick<ClusterRow, 'id' | 'gpu_type' | 'zone'>,
  changes: ReadonlyMap<string, NodeStatus>,
): Promise<void> {
  const writer = ctx.market.writer(cluster.gpu_type, cluster.zone);
  await writer.ensureCluster(cluster.id);
  await writer.submit((state, cs) =>
    state.setNodeStatus(cluster.id, changes, ctx.market.clock.now(), cs),
  );
  ctx.logger.info(
    { cluster: cluster.id, nodes: Object.fromEntries(changes) },
    'node status changed',
  );
}
