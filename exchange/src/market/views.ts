// The JSON the API shows for orders and leases (service spec "Resources"),
// built from rows. Money goes out as dollars rounded to cents (D1); every
// amount is computed in integer cents first.

import { HOUR_MS, formatDollars, leaseNamespace, mulDivHalfEven } from '@gpux/shared';

import type { FillRow, LeaseNodeRow, LeaseRow, OrderRow } from './rows.js';

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Hours as a JSON number, to the second (the spec shows hours as numbers). */
export function hoursOf(ms: number): number {
  return Math.round(ms / 1000) / 3600;
}

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

export type OrderJson = Record<string, unknown>;

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
  };
  if (r.limit_price_cents !== null) v['limit_price'] = formatDollars(r.limit_price_cents);
  v['status'] = r.status;
  v['filled_gpus'] = r.filled_gpus;
  v['allow_partial'] = r.allow_partial;
  v['start_time'] = iso(r.start_ms);
  if (r.flexible_window_hours !== null) v['flexible_window_hours'] = r.flexible_window_hours;
  if (r.reference_price_cents !== null) {
    v['reference_price'] = formatDollars(r.reference_price_cents);
  }
  if (r.cluster_id !== null) v['cluster_id'] = r.cluster_id;
  if (r.resale_lease_id !== null) v['resale_lease_id'] = r.resale_lease_id;
  if (fills.length > 0) {
    const avg = avgPriceOf(fills);
    if (avg !== null) {
      v['avg_price'] = formatDollars(avg);
      // Spec: shown for market orders that fill at once; one price, or the average.
      if (r.order_type === 'market') v['matched_price'] = formatDollars(avg);
    }
    v['total_cost'] = formatDollars(computeCostOf(fills));
    v['lease_id'] = fills[0]?.lease_id;
    v['filled_at'] = iso(r.filled_ms ?? fills[fills.length - 1]?.at_ms ?? r.created_ms);
    v['matches'] = fills.map((f) => ({
      matched_at: iso(f.at_ms),
      gpus: f.gpus,
      price: formatDollars(f.price_cents),
      lease_id: f.lease_id,
    }));
  }
  v['created_at'] = iso(r.created_ms);
  if (r.book_state !== null && r.expires_ms !== null) v['expires_at'] = iso(r.expires_ms);
  if (r.status === 'cancelled') {
    v['cancelled_gpus'] = r.cancelled_gpus;
    v['cancel_reason'] = r.cancel_reason;
    if (r.cancelled_ms !== null) v['cancelled_at'] = iso(r.cancelled_ms);
  }
  return v;
}

/** The rate shown for a lease (D4): cents per GPU-hour, half-even. */
export function rateCentsOf(l: LeaseRow): number {
  return mulDivHalfEven([l.hourly_cents], l.gpu_count);
}

/** A lease as lists show it (spec: without namespace, nodes and SSH endpoints). */
export function leaseView(l: LeaseRow): Record<string, unknown> {
  const v: Record<string, unknown> = {
    lease_id: l.id,
    customer_id: l.account_id,
    order_id: l.buy_order_id,
    gpu_type: l.gpu_type,
    gpu_count: l.gpu_count,
    instance_type: `${l.gpu_count}x${l.gpu_type}`,
    zone: l.zone,
    status: l.status,
    rate: formatDollars(rateCentsOf(l)),
    start_time: iso(l.start_ms),
    end_time: iso(l.end_ms),
    created_at: iso(l.created_ms),
  };
  if (l.ended_ms !== null) v['ended_at'] = iso(l.ended_ms);
  if (l.end_reason !== null) v['end_reason'] = l.end_reason;
  if (l.refund_cents !== null) v['refund_amount'] = formatDollars(l.refund_cents);
  return v;
}

/** The single-lease read: the list view plus where and how to reach it. */
export function leaseDetailView(
  l: LeaseRow,
  nodes: readonly LeaseNodeRow[],
  access: { sshEndpoints: readonly string[]; sshHostKeys: readonly string[] },
): Record<string, unknown> {
  return {
    ...leaseView(l),
    cluster_id: l.cluster_id,
    namespace: leaseNamespace(l.id),
    nodes: nodes.map((n) => n.hostname),
    // Reported by the agent once the lease is provisioned (D32).
    ssh_endpoints: access.sshEndpoints,
    ssh_host_keys: access.sshHostKeys,
  };
}

/** D26: hours used and left at `at`, and the exact refund for the rest of the lease. */
export function refundAt(
  l: LeaseRow,
  at: number,
): { usedMs: number; remainingMs: number; refundCents: number } {
  const from = Math.max(at, l.start_ms);
  const remainingMs = Math.max(0, l.end_ms - from);
  return {
    usedMs: from - l.start_ms,
    remainingMs,
    refundCents: mulDivHalfEven([l.hourly_cents, remainingMs], HOUR_MS),
  };
}
