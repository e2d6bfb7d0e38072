// The matching engine's vocabulary. Rules: docs/matching.md.

import type { CancelReason, Cents } from '@gpux/shared';

export type { Cents };
/** Milliseconds since the epoch. The engine never reads a clock. */
export type Millis = number;

export type Side = 'buy' | 'sell';
export type OrderType = 'market' | 'limit';

/** The reasons the book itself gives (the others come from leases, nodes and operators). */
export type EngineCancelReason = Exclude<
  CancelReason,
  'lease_terminated' | 'nodes_offline' | 'account_suspended' | 'cluster_cordoned'
>;

export type RejectCode =
  | 'invalid_request'
  | 'price_out_of_collar'
  | 'order_value_too_low'
  | 'self_trade_prevented'
  | 'insufficient_liquidity';

/** A new order as the exchange hands it to a book. */
export interface OrderInput {
  readonly id: string;
  readonly side: Side;
  readonly type: OrderType;
  readonly accountId: string;
  readonly orgId: string;
  /** Whole 8-GPU nodes. */
  readonly nodes: number;
  /**
   * Buy: lease length. Sell: window length from startAt (D6), unless
   * windowEndAt is given (then unused by the book).
   */
  readonly durationHours: number;
  readonly limitPrice?: Cents | undefined;
  /** Buys only; default false: all-or-nothing (D9). */
  readonly allowPartial?: boolean | undefined;
  /**
   * Sells only; default false: divisible by node (D9). True: the sell trades
   * only whole, all its nodes to one buy in one fill (a resale, D27).
   */
  readonly allOrNothing?: boolean | undefined;
  /** Default now; in the future the order waits (D13). */
  readonly startAt?: Millis | undefined;
  /** Buys only (D14). */
  readonly flexibleWindowHours?: number | undefined;
  /**
   * Sells (a resale passes available_until) and non-flexible limit buys only:
   * overrides the D12 default; Infinity: never (a sell still leaves when its
   * window can no longer hold a lease).
   */
  readonly expiresAt?: Millis | undefined;
  /** Sells only: the provider cluster whose nodes are offered (D11). */
  readonly clusterId?: string | undefined;
  /**
   * Sells only: the first instant the window's time can be used, which may be
   * later than the moment the order rests (a resale's available_from, D27).
   * Default: startAt (the one given, even a past one; else the acceptance).
   */
  readonly windowStartAt?: Millis | undefined;
  /**
   * Sells only: the exact end of the window (a resale's lease end, D27), not
   * necessarily a whole number of hours after anything. Default: startAt +
   * durationHours h.
   */
  readonly windowEndAt?: Millis | undefined;
}

export interface Fill {
  readonly sellOrderId: string;
  readonly clusterId: string;
  readonly nodes: number;
  /** Always the sell's limit price (D7). */
  readonly price: Cents;
  /** Nodes the sell has left after this fill. */
  readonly sellRemaining: number;
  /**
   * When the lease made of this fill starts: max(match time, the sell's
   * window start), D27's transfer_time. The match time for any sell whose
   * window started already.
   */
  readonly leaseStartAt: Millis;
}

export type BookEvent =
  /** The order entered the visible book (on acceptance or at its startAt). */
  | {
      readonly type: 'rested';
      readonly at: Millis;
      readonly orderId: string;
      readonly price: Cents;
      readonly nodes: number;
    }
  /** One matching step: one buy filled from one or more sells (D11). */
  | {
      readonly type: 'matched';
      readonly at: Millis;
      readonly buyOrderId: string;
      readonly fills: readonly Fill[];
      /** Nodes the buy has left after this step. */
      readonly buyRemaining: number;
    }
  /** The order left the book unfilled for `nodes` nodes. */
  | {
      readonly type: 'cancelled';
      readonly at: Millis;
      readonly orderId: string;
      readonly reason: EngineCancelReason;
      readonly nodes: number;
    };

/** D15: the collar a limit price must fall in, and what it is around. */
export interface CollarBand {
  /** The reference price × 2, in cents (a mid price may be a half cent). */
  readonly referenceTwiceCents: number;
  readonly reference: 'last_trade' | 'mid_price';
  /** Inclusive bounds in cents. */
  readonly lo: Cents;
  readonly hi: Cents;
}

export type PlaceResult =
  | {
      readonly ok: true;
      /** Where the order is once the command is done. */
      readonly state: 'resting' | 'scheduled' | 'filled' | 'cancelled';
      readonly filledNodes: number;
      /** For a flexible buy without a limit price: its reference price R (D14). */
      readonly referencePrice?: Cents | undefined;
      readonly events: readonly BookEvent[];
    }
  | {
      readonly ok: false;
      readonly code: RejectCode;
      readonly message: string;
      /** insufficient_liquidity only (D10). */
      readonly missingGpus?: number | undefined;
      /** price_out_of_collar only (D15): the band the price missed. */
      readonly collar?: CollarBand | undefined;
      /** Events of timers that fired before the order was looked at. */
      readonly events: readonly BookEvent[];
    };

export type CancelResult =
  | { readonly ok: true; readonly nodes: number; readonly events: readonly BookEvent[] }
  | { readonly ok: false; readonly code: 'not_found'; readonly events: readonly BookEvent[] };

export interface Level {
  readonly price: Cents;
  readonly gpus: number;
  readonly orders: number;
}

export interface LastTrade {
  readonly price: Cents;
  readonly gpus: number;
  readonly at: Millis;
}

export interface BookSnapshot {
  readonly bids: readonly Level[];
  readonly asks: readonly Level[];
  readonly bestBid: Cents | null;
  readonly bestAsk: Cents | null;
  readonly spread: Cents | null;
  /** Half-even rounded cent. */
  readonly midPrice: Cents | null;
  readonly lastTrade: LastTrade | null;
}

export interface EstimateQuery {
  readonly nodes: number;
  readonly durationHours: number;
  /** When given, that party's own asks are skipped (D17). */
  readonly accountId?: string | undefined;
  readonly orgId?: string | undefined;
}

export interface Estimate {
  readonly fills: readonly { readonly price: Cents; readonly gpus: number }[];
  /** GPU-weighted average fill price, half-even cent; null with no fill. */
  readonly estimatedPrice: Cents | null;
  readonly bestAsk: Cents | null;
  readonly worstFillPrice: Cents | null;
  /**
   * GPUs of every ask the buy could take (fits, inside the collar, not own;
   * not an all-or-nothing ask larger than the query).
   */
  readonly totalAvailable: number;
  readonly sufficientLiquidity: boolean;
  /** 0 when sufficient. */
  readonly missingGpus: number;
  /** Σ price × gpus × durationHours of the fills, exact. */
  readonly computeCostCents: number;
}

/** An open order as persisted; `restore` takes these in priority order. */
export interface OpenOrder {
  readonly input: OrderInput;
  readonly state: 'resting' | 'scheduled' | 'unseen';
  readonly remaining: number;
  /** When the book accepted it (for D12's default expiry, already resolved below). */
  readonly acceptedAt: Millis;
  /** Acceptance order in the book; breaks ties between timers due at the same time. */
  readonly acceptSeq: number;
  /**
   * Resting orders: time priority, the order in which they entered the
   * visible book (D8; a scheduled order enters at its startAt, so this is not
   * acceptSeq). Null for scheduled and unseen orders. Persist it: restore()
   * queues each price level by it.
   */
  readonly seq: number | null;
  readonly startAt: Millis;
  readonly expiresAt: Millis;
  /** Price it rests at: limit price, or R for a flexible buy without one. */
  readonly price: Cents | null;
}

/**
 * One book's command surface; the fast `OrderBook` and the tests' naive
 * reference book both implement it.
 */
export interface Book {
  /** The book's clock: the latest `now` it has seen. */
  readonly clock: Millis;
  place(input: OrderInput, now: Millis): PlaceResult;
  cancel(orderId: string, now: Millis): CancelResult;
  /** Advance the clock, firing due timers (expiry, arrivals at startAt). */
  advance(now: Millis): readonly BookEvent[];
  snapshot(depth: number): BookSnapshot;
  /** Pure: does not advance the clock; `now` is used for window fits. */
  estimate(query: EstimateQuery, now: Millis): Estimate;
  /** Resting, scheduled and unseen orders, resting ones in priority order (bids then asks). */
  openOrders(): OpenOrder[];
  lastTrade(): LastTrade | null;
}
