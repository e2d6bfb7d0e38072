// A provider cluster's nodes as one book sees them (D31): which are up, which
// a live lease holds, and how many the cluster's open sell orders offer.
// The open sells and live leases of a cluster never exceed its nodes that are
// not offline; the book checks them (sellRefusal) before a sell enters it. A
// cluster cordoned (by an operator, or by its provider) takes no new sell, and
// no resale of a lease on it (market/cordon.ts).

import { GPUS_PER_NODE, InvariantError } from '@gpux/shared';

import { refuse } from './refusal.js';
import type { Refusal } from './refusal.js';
import type { OrderRow } from './rows.js';

export interface NodeState {
  readonly id: string;
  readonly hostname: string;
  status: 'available' | 'online' | 'offline';
}

export interface ClusterState {
  readonly id: string;
  readonly providerAccountId: string;
  /** Added with addNode and changed with setNodeStatus, which keep `offline` counted. */
  readonly nodes: readonly NodeState[];
  /** How many of `nodes` are offline: freeNodes() runs for every sell, O(1). */
  offline: number;
  /** node id → the live lease on it. */
  readonly leased: Map<string, string>;
  /** Nodes offered by the cluster's open sell orders (resales excluded). */
  openSellNodes: number;
  /** Where the search for a free node starts: just after the last one leased. */
  nextFree: number;
  /** When it was cordoned (clusters.cordoned_at); null when not cordoned. */
  cordonedMs: number | null;
  /** Who holds the cordon (clusters.cordoned_by, migrations/0022); null when not cordoned. */
  cordonedBy: CordonedBy | null;
}

/** Who cordoned a cluster: the exchange's operators, or its own provider (migrations/0022). */
export const CORDONED_BY = ['operator', 'provider'] as const;
export type CordonedBy = (typeof CORDONED_BY)[number];

export function emptyCluster(
  id: string,
  providerAccountId: string,
  cordonedMs: number | null = null,
  cordonedBy: CordonedBy | null = cordonedMs === null ? null : 'operator',
): ClusterState {
  return {
    id,
    providerAccountId,
    nodes: [],
    offline: 0,
    leased: new Map(),
    openSellNodes: 0,
    nextFree: 0,
    cordonedMs,
    cordonedBy,
  };
}

/**
 * Why a new sell may not offer nodes of its cluster, if it may not: an
 * operator or its provider cordoned the cluster (a provider's sell, or a resale of a lease on
 * it: a cordon lands no new buyer there), or a provider's sell offers more
 * nodes than are free (D31).
 */
export function sellRefusal(
  clusters: ReadonlyMap<string, ClusterState>,
  row: Pick<OrderRow, 'cluster_id' | 'resale_lease_id' | 'gpu_count'>,
): Refusal | undefined {
  const c = row.cluster_id === null ? undefined : clusters.get(row.cluster_id);
  if (c === undefined) return undefined;
  if (c.cordonedMs !== null) {
    return refuse(
      'cluster_cordoned',
      c.cordonedBy === 'provider'
        ? `cluster ${c.id} is cordoned by its provider: it takes no new sell or resale until it is uncordoned`
        : `cluster ${c.id} is cordoned by the exchange's operators: it takes no new sell or resale until it is uncordoned`,
    );
  }
  const nodes = row.gpu_count / GPUS_PER_NODE;
  if (row.resale_lease_id !== null || freeNodes(c) >= nodes) return undefined;
  return refuse(
    'insufficient_capacity',
    `cluster ${c.id} has ${Math.max(0, freeNodes(c))} free nodes; the order offers ${nodes}`,
  );
}

/** A node of the cluster, as loaded. */
export function addNode(c: ClusterState, n: NodeState): void {
  (c.nodes as NodeState[]).push(n);
  if (n.status === 'offline') c.offline++;
}

/** D29: a node's status as heartbeats (or their silence) set it. */
export function setNodeStatus(c: ClusterState, n: NodeState, status: NodeState['status']): void {
  if (n.status === status) return;
  if (n.status === 'offline') c.offline--;
  if (status === 'offline') c.offline++;
  n.status = status;
}

/** D31: nodes a new sell order may still offer. */
export function freeNodes(c: ClusterState): number {
  return c.nodes.length - c.offline - c.leased.size - c.openSellNodes;
}

/**
 * Take `count` nodes that are up and not leased for a fill of the cluster's
 * sells. The search goes round the cluster from where the last lease ended,
 * so a cluster mostly leased is not searched from its first node every time.
 * The nodes are not marked leased here: the caller does, under the new
 * lease's id.
 */
export function takeFreeNodes(c: ClusterState, count: number): NodeState[] {
  const taken: NodeState[] = [];
  const all = c.nodes;
  const from = c.nextFree;
  for (let k = 0; k < all.length && taken.length < count; k++) {
    const i = (from + k) % all.length;
    const n = all[i];
    if (n !== undefined && n.status !== 'offline' && !c.leased.has(n.id)) {
      taken.push(n);
      c.nextFree = i + 1;
    }
  }
  if (taken.length < count) {
    // freeNodes() is checked before every sell enters the book.
    throw new InvariantError(
      `cluster ${c.id} has ${taken.length} free nodes; its sells offered ${count}`,
    );
  }
  c.openSellNodes -= count;
  return taken;
}
