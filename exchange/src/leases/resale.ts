// D27: a resale is a sell order in the same book for the whole lease, its
// window [available_from, lease end], expiring at available_until.

import { HOUR_MS, newId } from '@gpux/shared';
import type { Cents } from '@gpux/shared';

import { refuseField } from '../market/refusal.js';
import type { Refusal } from '../market/refusal.js';
import { newOrderRow } from '../market/rows.js';
import type { LeaseRow, OrderRow } from '../market/rows.js';

export interface ResaleRequest {
  /** Who resells: the lease's holder. */
  readonly accountId: string;
  readonly organizationId: string;
  readonly priceCents: Cents;
  /** Default: now. */
  readonly availableFrom?: number | undefined;
  /** Default: the lease end. */
  readonly availableUntil?: number | undefined;
  readonly transferImmediately: boolean;
}

export interface ResaleWindow {
  readonly from: number;
  readonly until: number;
}

/** D27: [available_from, lease end] offered, the order expiring at available_until. */
export function resaleWindow(l: LeaseRow, r: ResaleRequest, now: number): ResaleWindow | Refusal {
  const from = Math.max(now, r.availableFrom ?? now);
  const until = r.availableUntil ?? l.end_ms;
  if (until <= from) {
    return refuseField({
      field: 'available_until',
      rule: 'minimum',
      message: 'available_until must be after available_from (or now)',
    });
  }
  if (until > l.end_ms) {
    return refuseField({
      field: 'available_until',
      rule: 'maximum',
      message: `available_until must not be after the lease ends (${new Date(l.end_ms).toISOString()})`,
    });
  }
  // D6: the shortest lease is one hour.
  if (l.end_ms - from < HOUR_MS) {
    return refuseField({
      field: 'available_from',
      rule: 'maximum',
      message: 'less than one hour of the lease is left to resell after available_from (or now)',
    });
  }
  return { from, until };
}

/**
 * The resell order (D27): a sell of the whole lease that rests at once and
 * offers exactly [available_from, lease end] (the engine's windowStartAt and
 * windowEndAt): a buy of d hours matches when d fits between max(now,
 * available_from) and the lease end, and its lease starts at transfer_time =
 * max(match, available_from).
 */
export function resaleOrder(
  l: LeaseRow,
  r: ResaleRequest,
  now: number,
): { readonly ok: true; readonly order: OrderRow; readonly window: ResaleWindow } | Refusal {
  const w = resaleWindow(l, r, now);
  if ('ok' in w) return w;
  // The window's length for the column every order has; the book matches
  // against window_start_ms and window_end_ms.
  const hours = Math.ceil((l.end_ms - w.from) / HOUR_MS);
  const order = newOrderRow({
    id: newId('ord_'),
    account_id: r.accountId,
    organization_id: r.organizationId,
    side: 'sell',
    order_type: 'limit',
    gpu_type: l.gpu_type,
    zone: l.zone,
    gpu_count: l.gpu_count,
    duration_hours: hours,
    limit_price_cents: r.priceCents,
    allow_partial: false,
    start_ms: now,
    window_start_ms: w.from,
    window_end_ms: l.end_ms,
    flexible_window_hours: null,
    expires_input_ms: w.until < l.end_ms ? w.until : null,
    cluster_id: l.cluster_id,
    resale_lease_id: l.id,
    transfer_immediately: r.transferImmediately,
    created_ms: now,
  });
  return { ok: true, order, window: w };
}
