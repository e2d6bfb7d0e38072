// Order intake: a request becomes an order row (times are set when the
// book's writer runs it), after the checks that need no book: D6's sell
// rules and D31's cluster of the seller.

import { GpuxError, newId, parsePositiveDollars, parseTime } from '@gpux/shared';
import type { OrderType } from '@gpux/shared';

import type { Principal } from '../accounts/accounts.js';
import type { ClusterRef } from '../accounts/directory.js';
import { newOrderRow } from '../market/rows.js';
import type { OrderRequest } from './order-request.js';
import type { OrderRow } from '../market/rows.js';

/** A provider's clusters, read again when one looks missing (accounts/directory.ts). */
export interface ClusterLookup {
  clustersOf(accountId: string, fresh?: boolean): Promise<readonly ClusterRef[]>;
}

/** D6: the order type a request means, or why it means none. */
function orderTypeOf(b: OrderRequest, limitPrice: number | null): OrderType {
  // Sells are limit orders; a buy with a limit price is a limit order unless
  // it says otherwise (then it is refused, not silently changed).
  const orderType = b.order_type ?? (b.side === 'sell' || limitPrice !== null ? 'limit' : 'market');
  if (orderType === 'limit' && limitPrice === null) {
    throw new GpuxError(
      'invalid_request',
      'limit_price is required for limit orders and sells (D6)',
    );
  }
  if (orderType === 'market' && limitPrice !== null) {
    throw new GpuxError(
      'invalid_request',
      'a market order takes no limit_price; use order_type "limit"',
    );
  }
  if (b.side === 'sell') {
    if (orderType !== 'limit')
      throw new GpuxError('invalid_request', 'sell orders are limit orders (D6)');
    if (b.allow_partial !== undefined) {
      throw new GpuxError(
        'invalid_request',
        'allow_partial applies to buys; sells are divisible by node (D9)',
      );
    }
    if (b.flexible_window_hours !== undefined) {
      throw new GpuxError('invalid_request', 'flexible_window_hours applies to buys (D14)');
    }
  } else if (b.cluster_id !== undefined) {
    throw new GpuxError('invalid_request', 'cluster_id applies to sell orders');
  }
  return orderType;
}

/** The request as an order row; `created_ms` (and `start_ms` when not given) are set by the writer. */
export async function orderIntake(
  clusters: ClusterLookup,
  caller: Principal,
  b: OrderRequest,
): Promise<OrderRow> {
  const limitPrice =
    b.limit_price === undefined ? null : parsePositiveDollars(b.limit_price, 'limit_price');
  const orderType = orderTypeOf(b, limitPrice);
  const startMs = b.start_time === undefined ? 0 : parseTime(b.start_time, 'start_time');
  const clusterId = b.side === 'sell' ? await sellerCluster(clusters, caller, b) : null;
  return newOrderRow({
    id: newId('ord_'),
    account_id: caller.accountId,
    organization_id: caller.organizationId,
    side: b.side,
    order_type: orderType,
    gpu_type: b.gpu_type,
    zone: b.zone,
    gpu_count: b.gpu_count,
    duration_hours: b.duration_hours,
    limit_price_cents: limitPrice,
    allow_partial: b.allow_partial ?? false,
    start_ms: startMs,
    flexible_window_hours: b.flexible_window_hours ?? null,
    expires_input_ms: null,
    cluster_id: clusterId,
    resale_lease_id: null,
    transfer_immediately: null,
    created_ms: 0,
  });
}

/** D31: a sell offers nodes of one of the seller's own clusters in that book. */
async function sellerCluster(
  lookup: ClusterLookup,
  caller: Principal,
  b: OrderRequest,
): Promise<string> {
  let clusters = await lookup.clustersOf(caller.accountId);
  const missing =
    b.cluster_id !== undefined
      ? !clusters.some((x) => x.id === b.cluster_id)
      : !clusters.some((x) => x.gpu_type === b.gpu_type && x.zone === b.zone);
  // A cluster added since the list was read: read it again before saying no.
  if (missing) clusters = await lookup.clustersOf(caller.accountId, true);
  if (b.cluster_id !== undefined) {
    const c = clusters.find((x) => x.id === b.cluster_id);
    if (c === undefined) {
      throw new GpuxError('invalid_request', `cluster_id: you have no cluster ${b.cluster_id}`);
    }
    if (c.gpu_type !== b.gpu_type || c.zone !== b.zone) {
      throw new GpuxError(
        'invalid_request',
        `cluster ${c.id} is ${c.gpu_type} in ${c.zone}, not ${b.gpu_type} in ${b.zone}`,
      );
    }
    return c.id;
  }
  const here = clusters.filter((x) => x.gpu_type === b.gpu_type && x.zone === b.zone);
  const [only] = here;
  if (only === undefined) {
    throw new GpuxError(
      'invalid_request',
      `you have no ${b.gpu_type} cluster in ${b.zone}; an account sells only its own clusters' nodes (D6, D31)`,
    );
  }
  if (here.length > 1) {
    throw new GpuxError(
      'invalid_request',
      `you have ${here.length} ${b.gpu_type} clusters in ${b.zone}; say which with cluster_id (D31)`,
    );
  }
  return only.id;
}

export type { OrderRequest };
