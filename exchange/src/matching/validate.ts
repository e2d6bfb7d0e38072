import { HOUR_MS, MAX_DURATION_HOURS } from '@gpux/shared';

import type { Millis, OrderInput } from './types.js';

export const MAX_NODES = 10_000;
/** start_time at most this far ahead: the longest window (D6). */
const MAX_START_AHEAD_MS = MAX_DURATION_HOURS * HOUR_MS;
/** $1,000,000 per GPU-hour: far above any real price, far below 2^53 in every product. */
export const MAX_PRICE_CENTS = 100_000_000;

function intIn(x: unknown, lo: number, hi: number): boolean {
  return typeof x === 'number' && Number.isInteger(x) && x >= lo && x <= hi;
}

function nonEmpty(x: unknown): boolean {
  return typeof x === 'string' && x.length > 0;
}

/**
 * The engine's own guard (docs/matching.md, "Validation"): the API validates
 * requests with its schema first; this keeps the book consistent whatever
 * calls it. Returns a message, or null when the order is well formed.
 */
export function validateOrderInput(o: OrderInput, now: Millis): string | null {
  if (!nonEmpty(o.id)) return 'id is required';
  if (o.side !== 'buy' && o.side !== 'sell') return 'side must be buy or sell';
  if (o.type !== 'market' && o.type !== 'limit') return 'order_type must be market or limit';
  if (!nonEmpty(o.accountId) || !nonEmpty(o.orgId)) return 'account and organization are required';
  // D5
  if (!intIn(o.nodes, 1, MAX_NODES)) return 'gpu_count must be a multiple of 8 from 8 to 80000';
  if (!intIn(o.durationHours, 1, MAX_DURATION_HOURS))
    return 'duration_hours must be an integer from 1 to 720';
  if (o.type === 'limit') {
    if (!intIn(o.limitPrice, 1, MAX_PRICE_CENTS))
      return 'limit orders need a positive limit_price in whole cents';
  } else if (o.limitPrice !== undefined) {
    return 'market orders take no limit_price';
  }
  if (o.side === 'sell') {
    // D6
    if (o.type !== 'limit') return 'sell orders are limit orders';
    if (o.allowPartial === true) return 'allow_partial applies to buy orders only';
    if (o.flexibleWindowHours !== undefined)
      return 'flexible_window_hours applies to buy orders only';
    if (!nonEmpty(o.clusterId)) return 'sell orders name the cluster whose nodes they offer';
    if (o.windowStartAt !== undefined) {
      if (!Number.isSafeInteger(o.windowStartAt)) return 'the window start is not a valid time';
      if (o.windowStartAt > now + MAX_START_AHEAD_MS)
        return 'the window starts more than 720 hours ahead';
    }
    if (o.windowEndAt !== undefined && !Number.isSafeInteger(o.windowEndAt))
      return 'the window end is not a valid time';
  } else if (o.allOrNothing === true) {
    // D27: a resale is sold whole.
    return 'all_or_nothing applies to sell orders only';
  } else if (o.windowStartAt !== undefined || o.windowEndAt !== undefined) {
    return 'a window start or end applies to sell orders only';
  } else if (
    o.flexibleWindowHours !== undefined &&
    !intIn(o.flexibleWindowHours, 1, MAX_DURATION_HOURS)
  ) {
    return 'flexible_window_hours must be an integer from 1 to 720';
  }
  if (o.startAt !== undefined) {
    if (!Number.isFinite(o.startAt)) return 'start_time is not a valid time';
    if (o.startAt > now + MAX_START_AHEAD_MS) return 'start_time is more than 720 hours ahead';
  }
  if (o.expiresAt !== undefined) {
    if (o.side === 'buy' && (o.type !== 'limit' || o.flexibleWindowHours !== undefined)) {
      // Their end is their window's (D14) or none: an override would move
      // the market step of a flexible buy, or keep it waiting forever.
      return 'only sells and limit buys take an expiry';
    }
    if (Number.isNaN(o.expiresAt) || o.expiresAt <= now) return 'expires_at must be in the future';
  }
  if (o.side === 'sell') {
    const start = sellWindowStart(o, now);
    const end = sellWindowEnd(o, now);
    if (end <= start) return 'the sell window must end after it starts';
    if (end - start > MAX_DURATION_HOURS * HOUR_MS)
      return 'the sell window is longer than 720 hours';
    // From when its time can first be used: the order rests at max(now,
    // startAt), the window's time is usable from windowStartAt.
    const usableFrom = Math.max(now, o.startAt ?? now, start);
    // D6: the shortest lease is one hour.
    if (end - usableFrom < HOUR_MS) {
      return 'the sell window must leave at least one hour, the shortest lease';
    }
  }
  return null;
}

/**
 * D6, D27: the first instant of a sell's window: windowStartAt, else the
 * start the seller gave (even a past one), else now (acceptance).
 */
export function sellWindowStart(o: OrderInput, now: Millis): Millis {
  return o.windowStartAt ?? o.startAt ?? now;
}

/** D6, D27: a sell's window ends at windowEndAt, else durationHours from the start it gave. */
export function sellWindowEnd(o: OrderInput, now: Millis): Millis {
  return o.windowEndAt ?? (o.startAt ?? now) + o.durationHours * HOUR_MS;
}
