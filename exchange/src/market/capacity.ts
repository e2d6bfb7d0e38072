// A provider cluster's nodes as one book sees them (D31): which are up, which
// a live lease holds, and how many the cluster's open sell orders offer.
// The open sells and live leases of a cluster never exceed its nodes that are
// not offline; the book checks freeNodes() before a sell enters it.

import { InvariantError } from '@gpux/shared';

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
}

export function emptyCluster(id: string, providerAccountId: string): ClusterState {
  return {
    id,
    providerAccountId,
    nodes: [],
    offline: 0,
    leased: new Map(),
    openSellNodes: 0,
    nextFree: 0,
  };
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
