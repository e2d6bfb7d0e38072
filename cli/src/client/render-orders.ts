// The human output of orders (docs/api/orders.md): one order with its
// fills, a page of orders, a cancellation.

import type { Schemas } from './api.js';
import { fields, money, pageLine, paint, table, time } from './output.js';
import type { Style } from './output.js';
import type { Pairs } from './render.js';

type Order = Schemas['Order'];

export function orderStatus(o: Pick<Order, 'status' | 'cancel_reason'>, style: Style): string {
  const s = o.status === 'cancelled' ? paint(o.status, 'red', style) : o.status;
  return o.cancel_reason ? `${s} (${o.cancel_reason})` : s;
}

function limit(o: Order): string {
  return o.limit_price === undefined ? 'market' : `${money(o.limit_price)}/GPU-h`;
}

/** One order with its fills; `more` lines after its id (the operators' view adds the account). */
export function showOrder(order: Order, style: Style, more: Pairs = []): string {
  const pairs: (readonly [string, string])[] = [
    ['order', order.order_id],
    ...more,
    ['side', `${order.side} ${order.order_type}`],
    ['what', `${order.gpu_count}x${order.gpu_type} in ${order.zone} for ${order.duration_hours} h`],
    ['limit price', order.limit_price === undefined ? '-' : limit(order)],
    ['status', orderStatus(order, style)],
    ['filled', `${order.filled_gpus} of ${order.gpu_count} GPUs`],
    ['created', time(order.created_at, style)],
  ];
  if (order.avg_price !== undefined)
    pairs.push(['average price', `${money(order.avg_price)}/GPU-h`]);
  if (order.total_cost !== undefined) pairs.push(['compute cost', money(order.total_cost)]);
  if (order.expires_at !== undefined) pairs.push(['expires', time(order.expires_at, style)]);
  const head = fields(pairs, style);
  const fills = (order.matches ?? []).map((m) => [
    time(m.matched_at, style),
    String(m.gpus),
    money(m.price),
    m.lease_id,
  ]);
  return fills.length === 0
    ? head
    : `${head}\n${table(['matched', 'gpus', 'price', 'lease'], fills, style)}`;
}

export function showOrders(page: Schemas['OrderList'], style: Style): string {
  const rows = page.orders.map((o) => [
    o.order_id,
    o.side,
    `${o.gpu_count}x${o.gpu_type}`,
    o.zone,
    `${o.duration_hours} h`,
    limit(o),
    orderStatus(o, style),
    `${o.filled_gpus}/${o.gpu_count}`,
    time(o.created_at, style),
  ]);
  return (
    table(
      ['order', 'side', 'instance', 'zone', 'hours', 'limit', 'status', 'filled', 'created'],
      rows,
      style,
    ) + pageLine(page, page.orders.length, style)
  );
}

export function showCancellation(c: Schemas['Cancellation'], style: Style): string {
  return fields(
    [
      ['order', c.order_id],
      ['status', orderStatus(c, style)],
      ['cancelled', `${c.cancelled_gpus} GPUs unfilled`],
      ['at', time(c.cancelled_at, style)],
    ],
    style,
  );
}
