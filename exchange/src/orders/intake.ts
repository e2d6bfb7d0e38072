// Order intake: a request becomes an order row (times are set when the
// book's writer runs it), after the checks that need no book: D6's sell
// rules and D31's cluster of the seller.

import {
  FieldProblems,
  GpuxError,
  InvariantError,
  fieldError,
  newId,
  parsePositiveDollars,
  parseTime,
} from '@gpux/shared';
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

/**
 * D6: the order type a request means; each reason it means none (or a field
 * that does not apply to its side) is added to `problems`.
 */
function orderTypeOf(b: OrderRequest, hasPrice: boolean, problems: FieldProblems): OrderType {
  // Sells are limit orders; a buy with a limit price is a limit order unless
  // it says otherwise (then it is refused, not silently changed).
  const orderType = b.order_type ?? (b.side === 'sell' || hasPrice ? 'limit' : 'market');
  if (b.side === 'sell' && orderType !== 'limit') {
    problems.add({
      field: 'order_type',
      rule: 'enum',
      message: 'order_type must be limit for a sell: a sell offers nodes at its lowest price',
      allowed: ['limit'],
    });
  } else if (orderType === 'market' && hasPrice) {
    problems.add({
      field: 'limit_price',
      rule: 'conflict',
      message: 'a market order takes no limit_price (for a limit order, say order_type "limit")',
    });
  }
  if (orderType === 'limit' && !hasPrice) {
    problems.add({
      field: 'limit_price',
      rule: 'required',
      message:
        b.side === 'sell'
          ? 'limit_price is required for a sell: the lowest price per GPU-hour it takes'
          : 'limit_price is required for a limit order',
    });
  }
  if (b.side === 'sell') {
    // D9: sells are divisible by node.
    if (b.allow_partial !== undefined) {
      problems.add({
        field: 'allow_partial',
        rule: 'conflict',
        message: 'allow_partial applies to buys (a sell always fills node by node)',
      });
    }
    // D14
    if (b.flexible_window_hours !== undefined) {
      problems.add({
        field: 'flexible_window_hours',
        rule: 'conflict',
        message: 'flexible_window_hours applies to buys',
      });
    }
  } else if (b.cluster_id !== undefined) {
    problems.add({
      field: 'cluster_id',
      rule: 'conflict',
      message: 'cluster_id applies to sells',
    });
  }
  return orderType;
}

/** The request as an order row; `created_ms` (and `start_ms` when not given) are set by the writer. */
export async function orderIntake(
  clusters: ClusterLookup,
  caller: Principal,
  b: OrderRequest,
): Promise<OrderRow> {
  // Every problem of the request's fields is reported at once.
  const problems = new FieldProblems();
  const limitPrice =
    b.limit_price === undefined
      ? null
      : problems.take(() => parsePositiveDollars(b.limit_price, 'limit_price'));
  const orderType = orderTypeOf(b, b.limit_price !== undefined, problems);
  const startMs =
    b.start_time === undefined
      ? 0
      : problems.take(() => parseTime(b.start_time ?? '', 'start_time'));
  problems.throwIfAny();
  if (limitPrice === undefined || startMs === undefined) {
    throw new InvariantError('a field that failed to parse left no problem');
  }
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
      throw fieldError(
        'cluster_id',
        'enum',
        `cluster_id must be one of your clusters: ${ids(clusters)}`,
        {
          allowed: clusters.map((x) => x.id),
        },
      );
    }
    if (c.gpu_type !== b.gpu_type || c.zone !== b.zone) {
      throw fieldError(
        'cluster_id',
        'conflict',
        `cluster ${c.id} is ${c.gpu_type} in ${c.zone}, not ${b.gpu_type} in ${b.zone}`,
      );
    }
    return c.id;
  }
  const here = clusters.filter((x) => x.gpu_type === b.gpu_type && x.zone === b.zone);
  const [only] = here;
  // D6, D31: an account sells only its own clusters' nodes.
  if (only === undefined) {
    throw new GpuxError(
      'invalid_request',
      `you have no ${b.gpu_type} cluster in ${b.zone}; an account sells only the nodes of its own clusters`,
    );
  }
  if (here.length > 1) {
    throw fieldError(
      'cluster_id',
      'required',
      `you have ${here.length} ${b.gpu_type} clusters in ${b.zone}; say which with cluster_id (one of ${ids(here)})`,
      { allowed: here.map((x) => x.id) },
    );
  }
  return only.id;
}

function ids(clusters: readonly ClusterRef[]): string {
  return clusters.length === 0 ? 'you have none' : clusters.map((x) => x.id).join(', ');
}

export type { OrderRequest };
