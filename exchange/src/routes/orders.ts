// POST / GET /v1/orders, GET / DELETE /v1/orders/{id} (service spec
// Endpoints; D5-D18, D21). Validation that needs no state happens here;
// everything that depends on the book runs in the book's writer.

import {
  GPU_TYPES,
  GPUS_PER_NODE,
  GpuxError,
  MAX_DURATION_HOURS,
  ORDER_STATUSES,
  ORDER_TYPES,
  SIDES,
  ZONES,
  newId,
  parsePositiveDollars,
} from '@gpux/shared';
import type { GpuType, OrderStatus, OrderType, Side, Zone } from '@gpux/shared';
import type { FastifyInstance } from 'fastify';

import type { Principal } from '../accounts/accounts.js';
import type { Directory } from '../accounts/directory.js';
import { callerOf, requireScope } from '../auth/authenticate.js';
import type { Queryable } from '../db/database.js';
import { balanceOf } from '../ledger/ledger.js';
import type { PlaceOutcome } from '../market/book-state.js';
import { fillsOf, listOrders, orderOf } from '../market/queries.js';
import type { OrderRow } from '../market/rows.js';
import { orderView } from '../market/views.js';
import type { RouteContext } from '../services.js';
import { PAGE_QUERY } from './paging.js';
import { parseTime } from './time.js';

export const ID_PARAM = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

const createOrderBody = {
  type: 'object',
  additionalProperties: false,
  required: ['side', 'gpu_type', 'gpu_count', 'zone', 'duration_hours'],
  properties: {
    side: { type: 'string', enum: [...SIDES] },
    gpu_type: { type: 'string', enum: [...GPU_TYPES] },
    // D5: whole 8-GPU nodes; anything else is invalid_request, never rounded.
    gpu_count: { type: 'integer', minimum: GPUS_PER_NODE, maximum: 80_000, multipleOf: 8 },
    zone: { type: 'string', enum: [...ZONES] },
    duration_hours: { type: 'integer', minimum: 1, maximum: MAX_DURATION_HOURS },
    order_type: { type: 'string', enum: [...ORDER_TYPES] },
    // Dollars per GPU-hour, parsed exactly to cents in the handler (D1).
    limit_price: { type: 'number' },
    start_time: { type: 'string', minLength: 1, maxLength: 40 },
    flexible_window_hours: { type: 'integer', minimum: 1, maximum: MAX_DURATION_HOURS },
    // D9: buys are all-or-nothing unless they opt in.
    allow_partial: { type: 'boolean' },
    // D31: which of the seller's clusters offers the nodes.
    cluster_id: { type: 'string', minLength: 1, maxLength: 64 },
  },
} as const;

interface CreateOrderBody {
  side: Side;
  gpu_type: GpuType;
  gpu_count: number;
  zone: Zone;
  duration_hours: number;
  order_type?: OrderType;
  limit_price?: number;
  start_time?: string;
  flexible_window_hours?: number;
  allow_partial?: boolean;
  cluster_id?: string;
}

const listOrdersQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'string', enum: [...ORDER_STATUSES, 'all'], default: 'all' },
    side: { type: 'string', enum: [...SIDES] },
    ...PAGE_QUERY,
  },
} as const;

export function orderRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { db, limiter, market, directory } = ctx;

  app.post<{ Body: CreateOrderBody }>(
    '/v1/orders',
    {
      schema: { body: createOrderBody },
      preValidation: requireScope(directory, limiter, 'trade', 'create'),
    },
    async (request) => {
      const caller = callerOf(request);
      const row = await newOrderRow(directory, caller, request.body);
      const writer = market.writer(row.gpu_type, row.zone);
      if (row.side === 'buy' && caller.creditLimitCents !== null) {
        // The worst compute cost: at the limit price, or what a market buy would pay now.
        const cost =
          row.limit_price_cents !== null
            ? row.gpu_count * row.duration_hours * row.limit_price_cents
            : writer.view.book.estimate(
                {
                  nodes: row.gpu_count / GPUS_PER_NODE,
                  durationHours: row.duration_hours,
                  accountId: caller.accountId,
                  orgId: caller.organizationId,
                },
                market.clock.now(),
              ).computeCostCents;
        await checkCredit(db, caller, caller.creditLimitCents, cost);
      }
      if (row.cluster_id !== null) await writer.ensureCluster(row.cluster_id);
      const outcome = await writer.submit((state, changes) => {
        const now = market.clock.now();
        row.created_ms = now;
        if (request.body.start_time === undefined) row.start_ms = now;
        return state.place(row, now, changes);
      });
      return answer(outcome);
    },
  );

  app.get<{
    Querystring: { status: OrderStatus | 'all'; side?: Side; limit: number; offset: number };
  }>(
    '/v1/orders',
    {
      schema: { querystring: listOrdersQuery },
      preValidation: requireScope(directory, limiter, 'read'),
    },
    async (request) => {
      const { status, side, limit, offset } = request.query;
      const { rows, total } = await listOrders(db, callerOf(request).accountId, {
        status,
        side,
        limit,
        offset,
      });
      const fills = await fillsOf(
        db,
        rows.map((r) => r.id),
      );
      return {
        orders: rows.map((r) => orderView(r, fills.get(r.id) ?? [])),
        total,
        limit,
        offset,
      };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/orders/:id',
    { schema: { params: ID_PARAM }, preValidation: requireScope(directory, limiter, 'read') },
    async (request) => {
      const row = await orderOf(db, callerOf(request).accountId, request.params.id);
      if (row === undefined) throw new GpuxError('not_found', `no order ${request.params.id}`);
      const fills = await fillsOf(db, [row.id]);
      return orderView(row, fills.get(row.id) ?? []);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/orders/:id',
    {
      schema: { params: ID_PARAM },
      preValidation: requireScope(directory, limiter, 'trade', 'cancel'),
    },
    async (request) => {
      const accountId = callerOf(request).accountId;
      const id = request.params.id;
      const row = await orderOf(db, accountId, id);
      if (row === undefined) throw new GpuxError('not_found', `no order ${id}`);
      if (row.book_state !== null) {
        const outcome = await market
          .writer(row.gpu_type, row.zone)
          .submit((state, changes) => state.cancel(id, accountId, market.clock.now(), changes));
        if (outcome.open) {
          return {
            order_id: id,
            status: 'cancelled',
            cancelled_gpus: outcome.cancelledGpus,
            cancelled_at: new Date(outcome.cancelledAt).toISOString(),
          };
        }
      }
      // Closed before this request got to it: say how.
      const closed = await orderOf(db, accountId, id);
      if (closed === undefined) throw new GpuxError('not_found', `no order ${id}`);
      if (closed.status === 'cancelled') {
        // DELETE is idempotent: cancelling a cancelled order shows the cancellation.
        return {
          order_id: id,
          status: 'cancelled',
          cancelled_gpus: closed.cancelled_gpus,
          cancelled_at: new Date(closed.cancelled_ms ?? closed.created_ms).toISOString(),
          cancel_reason: closed.cancel_reason,
        };
      }
      throw new GpuxError(
        'order_already_filled',
        `order ${id} is fully filled; to give up its GPUs, terminate the lease (DELETE /v1/leases/{lease_id}) or resell it`,
      );
    },
  );
}

function answer(outcome: PlaceOutcome): Record<string, unknown> {
  if (outcome.ok) return outcome.order;
  throw new GpuxError(
    outcome.code,
    outcome.message,
    outcome.missingGpus === undefined ? {} : { details: { missing_gpus: outcome.missingGpus } },
  );
}

/**
 * The request as an order row (times are set when the writer runs it), after
 * the checks that need no book: D6 sell rules, the seller's cluster (D31),
 * the credit limit (D3).
 */
async function newOrderRow(
  directory: Directory,
  caller: Principal,
  b: CreateOrderBody,
): Promise<OrderRow> {
  const limitPrice =
    b.limit_price === undefined ? null : parsePositiveDollars(b.limit_price, 'limit_price');
  // D6: sells are limit orders; a buy with a limit price is a limit order
  // unless it says otherwise (then it is refused below, not silently changed).
  const orderType: OrderType =
    b.order_type ?? (b.side === 'sell' || limitPrice !== null ? 'limit' : 'market');
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
  const startMs = b.start_time === undefined ? 0 : parseTime(b.start_time, 'start_time');
  const clusterId = b.side === 'sell' ? await sellerCluster(directory, caller, b) : null;
  return {
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
    status: 'pending',
    filled_gpus: 0,
    cancelled_gpus: 0,
    cancel_reason: null,
    reference_price_cents: null,
    created_ms: 0,
    filled_ms: null,
    cancelled_ms: null,
    book_state: null,
    remaining_nodes: null,
    seq: null,
    accept_seq: null,
    accepted_ms: null,
    arrive_ms: null,
    expires_ms: null,
    rest_price_cents: null,
  };
}

/** D31: a sell offers nodes of one of the seller's own clusters in that book. */
async function sellerCluster(
  directory: Directory,
  caller: Principal,
  b: CreateOrderBody,
): Promise<string> {
  let clusters = await directory.clustersOf(caller.accountId);
  const missing =
    b.cluster_id !== undefined
      ? !clusters.some((x) => x.id === b.cluster_id)
      : !clusters.some((x) => x.gpu_type === b.gpu_type && x.zone === b.zone);
  // A cluster added since the list was read: read it again before saying no.
  if (missing) clusters = await directory.clustersOf(caller.accountId, true);
  if (b.cluster_id !== undefined) {
    const c = clusters.find((x) => x.id === b.cluster_id);
    if (c === undefined)
      throw new GpuxError('invalid_request', `cluster_id: you have no cluster ${b.cluster_id}`);
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

/**
 * D3: an account with a credit limit may not place a buy whose worst cost,
 * fee included, added to what it owes and to the worst cost of its open buys,
 * would pass the limit. A market buy counts what it would pay now. Two buys
 * of one account racing in different books may both pass: the check is not
 * serialized across books (docs/api/orders.md).
 */
async function checkCredit(
  db: Queryable,
  caller: Principal,
  limitCents: number,
  computeCents: number,
): Promise<void> {
  const balance = await balanceOf(db, caller.accountId);
  const [open] = await db.query<{ cents: number }>(
    `SELECT COALESCE(SUM(remaining_nodes::bigint * 8 * duration_hours * rest_price_cents), 0)::bigint AS cents
       FROM orders WHERE account_id = $1 AND side = 'buy' AND book_state IS NOT NULL`,
    [caller.accountId],
  );
  const withFee = (c: number): number => c + Math.ceil(c / 10);
  const exposure = -balance + withFee(open?.cents ?? 0) + withFee(computeCents);
  if (exposure > limitCents) {
    throw new GpuxError(
      'insufficient_funds',
      `this order could cost up to $${(withFee(computeCents) / 100).toFixed(2)} with the fee; ` +
        `with the balance and open buys that passes the credit limit of $${(limitCents / 100).toFixed(2)}`,
    );
  }
}
