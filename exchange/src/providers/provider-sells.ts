// The agent keeps its free nodes listed (D6, D12, D29): it lists, publishes
// and withdraws its cluster's sell orders through the same order path as
// POST /v1/orders (orders/order-commands.ts), so every rule of the book
// applies; a refusal of the book is an answer, not an error.

import { GPUS_PER_NODE, HOUR_MS, MAX_DURATION_HOURS } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import type { Refusal } from '../market/refusal.js';
import type { OrderRow } from '../market/rows.js';
import { cancelOrder, placeOrder } from '../orders/order-commands.js';
import { checkId, invalid, notFound, ownCluster, ownKnownCluster } from './provider-context.js';
import type { ProviderContext } from './provider-context.js';

export interface SellView {
  readonly orderId: string;
  readonly nodes: number;
  readonly priceCents: number;
  readonly windowEnd: Date;
  readonly expiresAt: Date | undefined;
  readonly remainingNodes: number;
}

export function sellView(o: OrderRow): SellView {
  return {
    orderId: o.id,
    nodes: o.gpu_count / GPUS_PER_NODE,
    priceCents: o.limit_price_cents ?? 0,
    windowEnd: new Date(o.start_ms + o.duration_hours * HOUR_MS),
    expiresAt: o.expires_ms === null ? undefined : new Date(o.expires_ms),
    remainingNodes: o.remaining_nodes ?? 0,
  };
}

/** The cluster's open sells, resales of its leases excluded. */
export async function listSells(
  ctx: ProviderContext,
  caller: Principal,
  clusterId: string,
): Promise<SellView[]> {
  const cluster = await ownCluster(ctx, caller, clusterId);
  const rows = await ctx.db.query<OrderRow>(
    `SELECT * FROM orders WHERE gpu_type = $1 AND zone = $2 AND book_state IS NOT NULL
        AND cluster_id = $3 AND side = 'sell' AND resale_lease_id IS NULL
      ORDER BY created_ms, id`,
    [cluster.gpu_type, cluster.zone, cluster.id],
  );
  return rows.map(sellView);
}

export async function publishSell(
  ctx: ProviderContext,
  caller: Principal,
  r: { clusterId: string; nodes: number; priceCents: number; windowHours: number },
): Promise<SellView | Refusal> {
  const { row: cluster, nodes } = await ownKnownCluster(ctx, caller, r.clusterId);
  if (!Number.isInteger(r.nodes) || r.nodes < 1 || r.nodes > nodes.size) {
    throw invalid(`nodes must be 1 to the cluster's nodes (${nodes.size})`);
  }
  if (!Number.isInteger(r.priceCents) || r.priceCents < 1 || r.priceCents > 100_000_000) {
    throw invalid('price_cents must be 1 to 100,000,000');
  }
  if (!Number.isInteger(r.windowHours) || r.windowHours < 1 || r.windowHours > MAX_DURATION_HOURS) {
    throw invalid(`window_hours must be 1 to ${MAX_DURATION_HOURS}`);
  }
  const placed = await placeOrder(ctx, caller, {
    side: 'sell',
    gpu_type: cluster.gpu_type,
    zone: cluster.zone,
    gpu_count: r.nodes * GPUS_PER_NODE,
    duration_hours: r.windowHours,
    // Dollars as the API takes them; the intake parses them back to exact cents (D1).
    limit_price: r.priceCents / 100,
    cluster_id: cluster.id,
  });
  return placed.ok ? sellView(placed.order) : placed;
}

/** Cancel an open sell of the cluster; 0 nodes when it was not open any more. */
export async function withdrawSell(
  ctx: ProviderContext,
  caller: Principal,
  clusterId: string,
  orderId: string,
): Promise<number> {
  const cluster = await ownCluster(ctx, caller, clusterId);
  checkId(orderId, 'order_id');
  const [row] = await ctx.db.query<{ cluster_id: string | null; book_state: string | null }>(
    'SELECT cluster_id, book_state FROM orders WHERE id = $1 AND account_id = $2',
    [orderId, caller.accountId],
  );
  if (row === undefined || row.cluster_id !== cluster.id) {
    throw notFound(`cluster ${cluster.id} has no order ${orderId}`);
  }
  if (row.book_state === null) return 0;
  const c = await cancelOrder(ctx, caller.accountId, orderId);
  return c.ok && c.cancelReason === undefined ? c.cancelledGpus / GPUS_PER_NODE : 0;
}
