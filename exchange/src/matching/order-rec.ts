import { HOUR_MS } from '@gpux/shared';

import type { DelayQueue } from './expiry-queues.js';
import type { PriceLevel } from './price-level.js';
import type { Cents, Millis, OrderInput } from './types.js';

export const SCHEDULED = 0;
export const RESTING = 1;
/** A flexible buy without a reference price, waiting for its window's end (D14). */
export const UNSEEN = 2;
export const DONE = 3;
/**
 * No price (a market buy, a flexible buy without R). Not NaN: one double in
 * the field would make V8 box every order's price as a heap number.
 */
export const NO_PRICE = -1;
export type RecState = typeof SCHEDULED | typeof RESTING | typeof UNSEEN | typeof DONE;

/**
 * The book's mutable record of an open order. One class (one hidden class for
 * V8), every field set in the constructor; it is also the node of its price
 * level's list, so resting costs no extra allocation.
 */
export class OrderRec {
  remaining: number;
  /** Resting price: the limit price, R for a flexible buy without one, else NO_PRICE. */
  price: Cents;
  state: RecState = SCHEDULED;
  level: PriceLevel | null = null;
  prev: OrderRec | null = null;
  next: OrderRec | null = null;
  /** Scratch: nodes promised to earlier steps of the walk being planned. */
  planned = 0;
  /** Time priority: when it entered the visible book (1, 2, …). */
  seq = 0;
  /** Its arrival entry in the book's TimerHeap, not yet due: 0 or 1. */
  timers = 0;
  /** Its list in the book's ExpiryQueues, and its neighbours there. */
  expQueue: DelayQueue | null = null;
  expPrev: OrderRec | null = null;
  expNext: OrderRec | null = null;

  readonly id: string;
  readonly isBuy: boolean;
  readonly isMarket: boolean;
  readonly accountId: string;
  readonly orgId: string;
  readonly nodes: number;
  readonly durationHours: number;
  readonly durationMs: Millis;
  readonly allowPartial: boolean;
  /** Sells: trades only whole, in one fill to one buy (D27). */
  readonly allOrNothing: boolean;
  /** Sells: first instant of the window whose time can be used (D6, D27). Buys: unused. */
  readonly windowStart: Millis;
  /** Sells: end of the window (D6, D27). Buys: unused. */
  readonly windowEnd: Millis;
  readonly clusterId: string;
  /** A flexible buy without a limit price: its window's end is a market step (D14). */
  readonly marketAtEnd: boolean;

  constructor(
    readonly input: OrderInput,
    readonly acceptedAt: Millis,
    readonly acceptSeq: number,
    readonly startAt: Millis,
    readonly expiresAt: Millis,
    price: Cents,
    remaining: number,
  ) {
    this.id = input.id;
    this.isBuy = input.side === 'buy';
    this.isMarket = input.type === 'market' && input.flexibleWindowHours === undefined;
    this.accountId = input.accountId;
    this.orgId = input.orgId;
    this.nodes = input.nodes;
    this.durationHours = input.durationHours;
    this.durationMs = input.durationHours * HOUR_MS;
    this.allowPartial = input.allowPartial === true;
    this.allOrNothing = !this.isBuy && input.allOrNothing === true;
    // D6: the window runs from the start the seller gave, even one in the
    // past; D27: a resale gives its window's start and exact end.
    this.windowStart = this.isBuy ? 0 : (input.windowStartAt ?? input.startAt ?? acceptedAt);
    this.windowEnd = this.isBuy
      ? Infinity
      : (input.windowEndAt ?? (input.startAt ?? acceptedAt) + this.durationMs);
    this.clusterId = input.clusterId ?? '';
    this.marketAtEnd = input.type === 'market' && input.flexibleWindowHours !== undefined;
    this.price = price;
    this.remaining = remaining;
  }
}

/**
 * Milliseconds of sell a's window a lease starting at t can still use
 * (D6, D27): a buy of d hours fits when d h ≤ this.
 */
export function windowLeft(a: OrderRec, t: Millis): Millis {
  return a.windowEnd - (t > a.windowStart ? t : a.windowStart);
}

/** When a lease from sell a matched at t starts: max(t, its window start), D27. */
export function leaseStart(a: OrderRec, t: Millis): Millis {
  return t > a.windowStart ? t : a.windowStart;
}

/** D17: same account or same organization never trade. */
export function sameParty(a: OrderRec, b: OrderRec): boolean {
  return a.orgId === b.orgId || a.accountId === b.accountId;
}
