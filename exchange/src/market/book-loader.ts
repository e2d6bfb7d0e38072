// A book's whole state from PostgreSQL (docs/architecture.md flow 5): the open
// orders with their priority, the last trade, the clusters with their nodes,
// and the live leases.

import type { GpuType, Zone } from '@gpux/shared';

import type { Queryable } from '../db/database.js';
import { OrderBook } from '../matching/index.js';
import type { LastTrade } from '../matching/index.js';
import { BookState } from './book-state.js';
import type { BookStateOptions, LiveLease } from './book-state.js';
import { addNode, emptyCluster } from './capacity.js';
import type { ClusterState, CordonedBy, NodeState } from './capacity.js';
import { openOrderOf } from './rows.js';
import type { LeaseNodeRow, LeaseRow, OrderRow } from './rows.js';

/**
 * A book's whole state from PostgreSQL (docs/architecture.md flow 5): the open
 * orders with their priority, the last trade, every cluster of the book with
 * its nodes (and whether it is cordoned), the live leases, and whether an
 * operator halted the book.
 *
 * A restart costs what is open, not what happened: every query here is
 * driven by an index (orders_open, fills_book, leases_live, clusters_book,
 * the primary and unique keys), so closed orders, old fills and ended leases
 * are never read. book-loader.db.test.ts checks the plans; `npm run bench --
 * restart` measures it (docs/benchmarks.md). The independent reads run at
 * once (on PostgreSQL, on as many pool connections).
 */
export async function loadBook(
  db: Queryable,
  gpuType: GpuType,
  zone: Zone,
  options: BookStateOptions,
): Promise<BookState> {
  const [orders, [last], clusters, leases, holds, [halt]] = await Promise.all([
    db.query<OrderRow>(
      'SELECT * FROM orders WHERE gpu_type = $1 AND zone = $2 AND book_state IS NOT NULL',
      [gpuType, zone],
    ),
    // The newest fill by (at_ms, book_seq), read from the top of fills_book.
    // It is also the one with the highest book_seq: the book's clock never
    // goes back (OrderBook.tick, and restore below starts it at this fill's
    // time at least), and each fill takes the clock's time and the next
    // book_seq.
    db.query<{ price_cents: number; gpus: number; at_ms: number; book_seq: number }>(
      `SELECT price_cents, gpus, at_ms, book_seq FROM fills WHERE gpu_type = $1 AND zone = $2
        ORDER BY at_ms DESC, book_seq DESC LIMIT 1`,
      [gpuType, zone],
    ),
    loadClusters(db, gpuType, zone),
    db.query<LeaseRow>(
      `SELECT * FROM leases WHERE gpu_type = $1 AND zone = $2 AND status IN ('provisioning', 'active')`,
      [gpuType, zone],
    ),
    // D3: the credit held by the book's buys (orders/credit.ts).
    db.query<{ order_id: string; cents: number }>(
      'SELECT order_id, cents FROM credit_holds WHERE gpu_type = $1 AND zone = $2',
      [gpuType, zone],
    ),
    // Issue 21: an operator's halt outlives the process (migrations/0016).
    db.query<{ halted_ms: number }>(
      'SELECT halted_ms FROM book_halts WHERE gpu_type = $1 AND zone = $2 AND halted_ms IS NOT NULL',
      [gpuType, zone],
    ),
  ]);
  const nodes =
    leases.length === 0
      ? []
      : await db.query<LeaseNodeRow>('SELECT * FROM lease_nodes WHERE lease_id = ANY($1::text[])', [
          leases.map((l) => l.id),
        ]);

  const lastTrade: LastTrade | null =
    last === undefined ? null : { price: last.price_cents, gpus: last.gpus, at: last.at_ms };
  // The clock resumes at the book's latest event on record: its last fill, or
  // the latest acceptance of an open order, which restore() takes from the
  // orders themselves (a closed order's accepted_ms is NULL, rows.ts).
  const book = OrderBook.restore(orders.map(openOrderOf), lastTrade, last?.at_ms ?? 0);
  const state = new BookState(gpuType, zone, book, last?.book_seq ?? 0, options);
  if (halt !== undefined) state.restoreHalt(Number(halt.halted_ms));
  for (const r of orders) state.orders.set(r.id, r);
  // A hold whose order never arrived is not the book's (Market purges it).
  for (const h of holds) if (state.orders.has(h.order_id)) state.holds.set(h.order_id, h.cents);

  for (const c of clusters) state.clusters.set(c.id, c);
  const byLease = new Map<string, LiveLease>();
  for (const l of leases) byLease.set(l.id, { row: l, nodes: [], resaleOrderId: null });
  for (const n of nodes) byLease.get(n.lease_id)?.nodes.push(n);
  for (const live of byLease.values()) {
    state.leases.set(live.row.id, live);
    const cluster = state.clusters.get(live.row.cluster_id);
    for (const n of live.nodes) cluster?.leased.set(n.node_id, live.row.id);
  }
  for (const r of orders) {
    if (r.side !== 'sell' || r.remaining_nodes === null) continue;
    if (r.resale_lease_id !== null) {
      const live = state.leases.get(r.resale_lease_id);
      if (live !== undefined) live.resaleOrderId = r.id;
    } else if (r.cluster_id !== null) {
      const cluster = state.clusters.get(r.cluster_id);
      if (cluster !== undefined) cluster.openSellNodes += r.remaining_nodes;
    }
  }
  return state;
}

/**
 * The clusters of a book (or one of them) with their nodes and whether an
 * operator cordoned them (market/cordon.ts); capacity counters empty.
 */
export async function loadClusters(
  db: Queryable,
  gpuType: GpuType,
  zone: Zone,
  clusterId?: string,
): Promise<ClusterState[]> {
  const rows = await db.query<{
    cluster_id: string;
    provider_account_id: string;
    cordoned_ms: number | null;
    cordoned_by: CordonedBy | null;
    node_id: string | null;
    hostname: string | null;
    status: NodeState['status'] | null;
  }>(
    `SELECT c.id AS cluster_id, c.provider_account_id,
            (extract(epoch FROM c.cordoned_at) * 1000)::float8 AS cordoned_ms, c.cordoned_by,
            n.id AS node_id, n.hostname, n.status
       FROM clusters c LEFT JOIN nodes n ON n.cluster_id = c.id
      WHERE c.gpu_type = $1 AND c.zone = $2 AND ($3::text IS NULL OR c.id = $3)
      ORDER BY c.id, n.hostname`,
    [gpuType, zone, clusterId ?? null],
  );
  const out = new Map<string, ClusterState>();
  for (const r of rows) {
    let c = out.get(r.cluster_id);
    if (c === undefined) {
      c = emptyCluster(r.cluster_id, r.provider_account_id, r.cordoned_ms, r.cordoned_by);
      out.set(r.cluster_id, c);
    }
    if (r.node_id !== null && r.hostname !== null && r.status !== null) {
      addNode(c, { id: r.node_id, hostname: r.hostname, status: r.status });
    }
  }
  return [...out.values()];
}
