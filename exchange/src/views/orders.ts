// The JSON the API shows for orders (service spec "Resources"), built from
// rows, and its schema. Money goes out as dollars rounded to cents (D1);
// every amount is computed in integer cents first.
//
// The schema is the routes' response schema: Fastify serializes with it and
// drops any property it does not list, so a field added here must be added
// to the schema too (the view's type, derived from the schema, refuses it
// otherwise).

import {
  CANCEL_REASONS,
  GPU_TYPES,
  ORDER_STATUSES,
  ORDER_TYPES,
  SIDES,
  ZONES,
  formatDollars,
  mulDivHalfEven,
} from '@gpux/shared';
import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

import { Dollars, GpuCount, Nullable, PAGE_FIELDS, StringEnum, Timestamp } from '../http/schema.js';
import type { Cancellation } from '../orders/order-commands.js';
import type { FillRow, OrderRow } from '../market/rows.js';
import { iso } from './format.js';

export const MatchSchema = Type.Object(
  {
    matched_at: Timestamp(),
    gpus: Type.Integer(),
    price: Dollars('Dollars per GPU-hour: the seller’s ask.'),
    lease_id: Type.String({ description: 'The lease this fill created.' }),
  },
  { title: 'Match', description: 'One fill of the order.' },
);

/** Properties in the order the view has always emitted them (the serializer keeps schema order). */
export const OrderSchema = Type.Object(
  {
    order_id: Type.String(),
    side: StringEnum(SIDES),
    gpu_type: StringEnum(GPU_TYPES),
    gpu_count: GpuCount(),
    zone: StringEnum(ZONES),
    duration_hours: Type.Integer(),
    order_type: StringEnum(ORDER_TYPES),
    limit_price: Type.Optional(Dollars('Limit orders: dollars per GPU-hour.')),
    status: StringEnum(ORDER_STATUSES),
    filled_gpus: Type.Integer(),
    allow_partial: Type.Boolean({ description: 'May fill in part.' }),
    start_time: Timestamp(),
    flexible_window_hours: Type.Optional(
      Type.Integer({ description: 'May fill any time in [start_time, start_time + this].' }),
    ),
    reference_price: Type.Optional(
      Dollars('The estimate at creation a flexible order waits to beat.'),
    ),
    cluster_id: Type.Optional(Type.String({ description: 'Sell orders: the offering cluster.' })),
    resale_lease_id: Type.Optional(Type.String({ description: 'The lease being resold.' })),
    avg_price: Type.Optional(Dollars('GPU-weighted average price of the fills.')),
    matched_price: Type.Optional(Dollars('Market orders: the fill price (or the average).')),
    total_cost: Type.Optional(Dollars('Compute cost of the fills, no fee.')),
    lease_id: Type.Optional(Type.String({ description: 'The first fill’s lease.' })),
    filled_at: Type.Optional(Timestamp()),
    matches: Type.Optional(Type.Array(MatchSchema)),
    created_at: Timestamp(),
    expires_at: Type.Optional(Timestamp('Orders still waiting: when they expire.')),
    cancelled_gpus: Type.Optional(Type.Integer()),
    cancel_reason: Type.Optional(
      Nullable(
        StringEnum(CANCEL_REASONS, { description: 'Why the order left the book unfilled.' }),
      ),
    ),
    cancelled_at: Type.Optional(Timestamp()),
  },
  { title: 'Order', description: 'An order, with its fills.' },
);
export type OrderJson = Static<typeof OrderSchema>;

export const OrderListSchema = Type.Object(
  {
    orders: Type.Array(OrderSchema, { description: 'Newest first.' }),
    ...PAGE_FIELDS,
  },
  { title: 'OrderList' },
);

export const CancellationSchema = Type.Object(
  {
    order_id: Type.String(),
    status: Type.Literal('cancelled'),
    cancelled_gpus: Type.Integer({ description: 'Unfilled GPUs cancelled.' }),
    cancelled_at: Timestamp(),
    cancel_reason: Type.Optional(
      Nullable(
        StringEnum(CANCEL_REASONS, {
          description: 'Set when the order had been cancelled before this request.',
        }),
      ),
    ),
  },
  { title: 'Cancellation' },
);
export type CancellationJson = Static<typeof CancellationSchema>;

/** Σ price × gpus × hours of the fills: the compute cost, no fee (D2). */
export function computeCostOf(fills: readonly FillRow[]): number {
  let total = 0;
  for (const f of fills) total += f.price_cents * f.gpus * f.hours;
  return total;
}

/** GPU-weighted average price, half-even cent; null without fills. */
export function avgPriceOf(fills: readonly FillRow[]): number | null {
  let gpus = 0;
  let weighted = 0;
  for (const f of fills) {
    gpus += f.gpus;
    weighted += f.price_cents * f.gpus;
  }
  return gpus === 0 ? null : mulDivHalfEven([weighted], gpus);
}

/**
 * An order as GET /v1/orders/{id} shows it. `fills` are the order's own, in
 * the order they happened. Optional fields are left out rather than null
 * when they do not apply (a sell has no flexible window).
 */
export function orderView(r: OrderRow, fills: readonly FillRow[]): OrderJson {
  const v: OrderJson = {
    order_id: r.id,
    side: r.side,
    gpu_type: r.gpu_type,
    gpu_count: r.gpu_count,
    zone: r.zone,
    duration_hours: r.duration_hours,
    order_type: r.order_type,
    status: r.status,
    filled_gpus: r.filled_gpus,
    allow_partial: r.allow_partial,
    start_time: iso(r.start_ms),
    created_at: iso(r.created_ms),
  };
  if (r.limit_price_cents !== null) v.limit_price = formatDollars(r.limit_price_cents);
  if (r.flexible_window_hours !== null) v.flexible_window_hours = r.flexible_window_hours;
  if (r.reference_price_cents !== null) {
    v.reference_price = formatDollars(r.reference_price_cents);
  }
  if (r.cluster_id !== null) v.cluster_id = r.cluster_id;
  if (r.resale_lease_id !== null) v.resale_lease_id = r.resale_lease_id;
  const [first] = fills;
  if (first !== undefined) {
    const avg = avgPriceOf(fills);
    if (avg !== null) {
      v.avg_price = formatDollars(avg);
      // Spec: shown for market orders that fill at once; one price, or the average.
      if (r.order_type === 'market') v.matched_price = formatDollars(avg);
    }
    v.total_cost = formatDollars(computeCostOf(fills));
    v.lease_id = first.lease_id;
    v.filled_at = iso(r.filled_ms ?? fills[fills.length - 1]?.at_ms ?? r.created_ms);
    v.matches = fills.map((f) => ({
      matched_at: iso(f.at_ms),
      gpus: f.gpus,
      price: formatDollars(f.price_cents),
      lease_id: f.lease_id,
    }));
  }
  if (r.book_state !== null && r.expires_ms !== null) v.expires_at = iso(r.expires_ms);
  if (r.status === 'cancelled') {
    v.cancelled_gpus = r.cancelled_gpus;
    v.cancel_reason = r.cancel_reason;
    if (r.cancelled_ms !== null) v.cancelled_at = iso(r.cancelled_ms);
  }
  return v;
}

/** DELETE /v1/orders/{id}. */
export function cancellationView(c: Cancellation): CancellationJson {
  return {
    order_id: c.orderId,
    status: 'cancelled',
    cancelled_gpus: c.cancelledGpus,
    cancelled_at: iso(c.cancelledAt),
    ...(c.cancelReason === undefined ? {} : { cancel_reason: c.cancelReason }),
  };
}
