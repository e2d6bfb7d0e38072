// A cluster is cordoned, or its cordon lifted, by the exchange's operators
// (issue 21, POST /v1/admin/clusters/{id}/cordon, docs/api/admin.md) or by
// its own provider (issue 23, POST /v1/clusters/{id}/cordon,
// docs/providers.md). A command of the cluster's book (book-writer.ts): the
// open sells of the cluster and the resales of leases on it leave the book
// (cancel_reason cluster_cordoned), and from then on the book refuses any new
// one with cluster_cordoned (capacity.ts, sellRefusal) until the cordon is
// lifted. Live leases stay: they run out (an operator may revoke them apart).
// The withdrawals, clusters.cordoned_at / cordoned_by and the caller's audit
// row are one write batch (ChangeSet.cordons, migrations/0017 and 0022), and
// a book loaded later (a restart, a takeover) reads the cordon back
// (book-loader.ts).
//
// Who holds the cordon (migrations/0022): an operator's cordon outranks the
// provider's. A provider's uncordon lifts only a cordon of its own: an
// operator's is refused (cluster_cordoned), so a provider cannot put back on
// the market a cluster the operators took off it. An operator cordoning a
// cluster its provider cordoned takes the cordon over; an operator's
// uncordon lifts any cordon.

import { InvariantError } from '@gpux/shared';

import type { BookState } from './book-state.js';
import type { CordonedBy } from './capacity.js';
import type { ChangeSet } from './change-set.js';

export { CORDONED_BY } from './capacity.js';
export type { CordonedBy } from './capacity.js';

export interface CordonChange {
  /** Whether the call changed anything: cordoning a cordoned cluster does not. */
  readonly changed: boolean;
  /** clusters.cordoned_at (epoch ms) before and after; null: not cordoned. */
  readonly beforeMs: number | null;
  readonly afterMs: number | null;
  /** clusters.cordoned_by before and after. */
  readonly beforeBy: CordonedBy | null;
  readonly afterBy: CordonedBy | null;
  /** The orders the cordon withdrew. */
  readonly cancelledOrderIds: readonly string[];
  /** A provider's uncordon of an operator's cordon: refused, nothing changed. */
  readonly refused: boolean;
}

/**
 * Cordon (`cordoned`) or uncordon the cluster, loaded in this book
 * (BookWriter.ensureCluster), at `now`, on behalf of `by`. Uncordoning
 * withdraws nothing and puts nothing back: the agent lists its free nodes
 * again at its next round.
 */
export function setCordon(
  state: BookState,
  clusterId: string,
  cordoned: boolean,
  by: CordonedBy,
  now: number,
  changes: ChangeSet,
): CordonChange {
  const cluster = state.clusters.get(clusterId);
  if (cluster === undefined) {
    throw new InvariantError(
      `cluster ${clusterId} is not loaded in book ${state.gpuType}/${state.zone}`,
    );
  }
  const beforeMs = cluster.cordonedMs;
  const beforeBy = cluster.cordonedBy;
  const same = {
    beforeMs,
    afterMs: beforeMs,
    beforeBy,
    afterBy: beforeBy,
    cancelledOrderIds: [],
  };
  if (beforeMs === null) {
    if (!cordoned) return { ...same, changed: false, refused: false };
  } else if (cordoned) {
    // Cordoned already: an operator takes over a provider's cordon, else nothing changes.
    if (by === beforeBy || by === 'provider') return { ...same, changed: false, refused: false };
  } else if (by === 'provider' && beforeBy !== 'provider') {
    return { ...same, changed: false, refused: true };
  }
  const cancelledOrderIds =
    cordoned && beforeMs === null
      ? state.withdrawOrders((o) => o.cluster_id === clusterId, 'cluster_cordoned', now, changes)
      : [];
  cluster.cordonedMs = cordoned ? (beforeMs ?? now) : null;
  cluster.cordonedBy = cordoned ? by : null;
  changes.cordons.push({
    id: clusterId,
    cordoned_at: cluster.cordonedMs === null ? null : new Date(cluster.cordonedMs).toISOString(),
    cordoned_by: cluster.cordonedBy,
  });
  return {
    changed: true,
    refused: false,
    beforeMs,
    afterMs: cluster.cordonedMs,
    beforeBy,
    afterBy: cluster.cordonedBy,
    cancelledOrderIds,
  };
}
