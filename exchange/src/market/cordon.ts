// An operator cordons a provider's cluster, or lifts the cordon (issue 21,
// docs/api/admin.md). A command of the cluster's book (book-writer.ts): the
// open sells of the cluster and the resales of leases on it leave the book
// (cancel_reason cluster_cordoned), and from then on the book refuses any new
// one with cluster_cordoned (capacity.ts, sellRefusal) until the cordon is
// lifted. Live leases stay: an operator revokes them apart. The withdrawals,
// clusters.cordoned_at and the caller's audit row are one write batch
// (ChangeSet.cordons, migrations/0017), and a book loaded later (a restart, a
// takeover) reads the cordon back (book-loader.ts).

import { InvariantError } from '@gpux/shared';

import type { BookState } from './book-state.js';
import type { ChangeSet } from './change-set.js';

export interface CordonChange {
  /** Whether the call changed anything: cordoning a cordoned cluster does not. */
  readonly changed: boolean;
  /** clusters.cordoned_at (epoch ms) before and after; null: not cordoned. */
  readonly beforeMs: number | null;
  readonly afterMs: number | null;
  /** The orders the cordon withdrew. */
  readonly cancelledOrderIds: readonly string[];
}

/**
 * Cordon (`cordoned`) or uncordon the cluster, loaded in this book
 * (BookWriter.ensureCluster), at `now`. Uncordoning withdraws nothing and
 * puts nothing back: the agent lists its free nodes again at its next round.
 */
export function setCordon(
  state: BookState,
  clusterId: string,
  cordoned: boolean,
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
  if ((beforeMs !== null) === cordoned) {
    return { changed: false, beforeMs, afterMs: beforeMs, cancelledOrderIds: [] };
  }
  const cancelledOrderIds = cordoned
    ? state.withdrawOrders((o) => o.cluster_id === clusterId, 'cluster_cordoned', now, changes)
    : [];
  cluster.cordonedMs = cordoned ? now : null;
  changes.cordons.push({
    id: clusterId,
    cordoned_at: cordoned ? new Date(now).toISOString() : null,
  });
  return { changed: true, beforeMs, afterMs: cluster.cordonedMs, cancelledOrderIds };
}
