// Which sells to withdraw and how many to list, as a pure decision: one
// sell order per free node at the agent's ask (D6), each offering now …
// now + GPUX_LIST_HOURS and renewed before it expires (D12: at window end
// − 1 h). Free = online, not leased (as the exchange showed it, less the
// nodes the agent knows were leased since), minus what open sells offer.
// Without an ask (GPUX_ASK_PRICE unset) the agent does not sell: every open
// sell it is given (the seller gives its own only) is withdrawn and none
// listed (issue 23).

import { NodeStatus } from '@gpux/proto';

export interface NodeView {
  readonly status: NodeStatus;
  /** Set while a live lease holds the node. */
  readonly leaseId: string;
}

export interface SellView {
  readonly orderId: string;
  readonly priceCents: number;
  readonly remainingNodes: number;
  readonly expiresAtMs: number | undefined;
}

export interface SellPlanInput {
  readonly nodes: readonly NodeView[];
  /**
   * Nodes the view shows free that the agent knows are leased: a lease it
   * was told to provision, a sell filled since the view was taken.
   */
  readonly knownLeased?: number;
  readonly sells: readonly SellView[];
  /** undefined: not selling; the open sells are all withdrawn. */
  readonly askCents: number | undefined;
  readonly nowMs: number;
  /** A sell expiring sooner than this is withdrawn and listed again. */
  readonly renewBeforeMs: number;
}

export interface SellPlan {
  /** Online nodes no lease holds. */
  readonly free: number;
  /** Withdrawn first, so the new sells fit the cluster's capacity (D31). */
  readonly withdraw: readonly string[];
  /** Sells of one node each to list. */
  readonly publish: number;
}

export function planSells(input: SellPlanInput): SellPlan {
  const shownFree = input.nodes.filter(
    (n) => n.status === NodeStatus.NODE_STATUS_ONLINE && n.leaseId === '',
  ).length;
  const free = Math.max(0, shownFree - (input.knownLeased ?? 0));
  const open = input.sells.filter((s) => s.remainingNodes > 0);
  if (input.askCents === undefined) {
    return { free, withdraw: open.map((s) => s.orderId), publish: 0 };
  }
  // Kept: at the ask, not about to expire, freshest first, as many as free nodes.
  const candidates = open
    .filter(
      (s) =>
        s.priceCents === input.askCents &&
        (s.expiresAtMs === undefined || s.expiresAtMs > input.nowMs + input.renewBeforeMs),
    )
    .sort((a, b) => (b.expiresAtMs ?? Infinity) - (a.expiresAtMs ?? Infinity));
  const kept = new Set<string>();
  let offered = 0;
  for (const s of candidates) {
    if (offered + s.remainingNodes > free) continue;
    kept.add(s.orderId);
    offered += s.remainingNodes;
  }
  return {
    free,
    withdraw: open.filter((s) => !kept.has(s.orderId)).map((s) => s.orderId),
    publish: free - offered,
  };
}
