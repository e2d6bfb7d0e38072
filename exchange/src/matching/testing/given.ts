// Builders for the matching engine's given/when/then tests: orders with
// defaults, expected events and levels written out by hand. Rules:
// docs/matching.md. No test framework here, so it type-checks with the sources.

import { OrderRec } from '../order-rec.js';
import type {
  Book,
  BookEvent,
  BookSnapshot,
  Cents,
  EngineCancelReason,
  Fill,
  Level,
  Millis,
  OrderInput,
  PlaceResult,
} from '../types.js';

export const HOUR: Millis = 3_600_000;
/** The tests' epoch: every `now` is T0 plus some hours. */
export const T0: Millis = Date.UTC(2030, 0, 1);
/** T0 + h hours. */
export const at = (h: number): Millis => T0 + h * HOUR;

/** Optional fields a test may override. Each order is its own party unless told. */
export type Extra = Partial<Omit<OrderInput, 'id' | 'side' | 'type'>>;

const party = (id: string): { accountId: string; orgId: string } => ({
  accountId: `acct-${id}`,
  orgId: `org-${id}`,
});

/** Limit buy, default 4 h lease, all-or-nothing. */
export const limitBuy = (
  id: string,
  nodes: number,
  price: Cents,
  extra: Extra = {},
): OrderInput => ({
  id,
  side: 'buy',
  type: 'limit',
  ...party(id),
  nodes,
  durationHours: 4,
  limitPrice: price,
  ...extra,
});

/** Market buy, default 4 h lease, all-or-nothing. */
export const marketBuy = (id: string, nodes: number, extra: Extra = {}): OrderInput => ({
  id,
  side: 'buy',
  type: 'market',
  ...party(id),
  nodes,
  durationHours: 4,
  ...extra,
});

/** Sell (always limit, D6), default 48 h window, cluster `cl-<id>`. */
export const sell = (id: string, nodes: number, price: Cents, extra: Extra = {}): OrderInput => ({
  id,
  side: 'sell',
  type: 'limit',
  ...party(id),
  nodes,
  durationHours: 48,
  limitPrice: price,
  clusterId: `cl-${id}`,
  ...extra,
});

/** An all-or-nothing sell (a resale, D27). */
export const aonSell = (id: string, nodes: number, price: Cents, extra: Extra = {}): OrderInput =>
  sell(id, nodes, price, { allOrNothing: true, ...extra });

/** One party of organisation `org-B` (several such orders: same org, different accounts). */
export const orgB = (account: string): { accountId: string; orgId: string } => ({
  accountId: account,
  orgId: 'org-B',
});

export type Accepted = Extract<PlaceResult, { ok: true }>;
export type Rejected = Extract<PlaceResult, { ok: false }>;

/** Given-step placement: the order must be accepted, else the test set-up is wrong. */
export function place(book: Book, order: OrderInput, now: Millis): Accepted {
  const r = book.place(order, now);
  if (!r.ok) throw new Error(`given: ${order.id} was rejected: ${r.code} (${r.message})`);
  return r;
}

/** Places `[order, hoursAfterT0]` pairs in turn, each of which must be accepted. */
export function givenOrders(book: Book, steps: readonly (readonly [OrderInput, number])[]): void {
  for (const [order, h] of steps) place(book, order, at(h));
}

/** given: a trade at `price` (1 node, at T0 + h hours), leaving both sides empty. */
export function givenTradeAt(book: Book, price: Cents, h = 0): void {
  givenOrders(book, [
    [sell('s0', 1, price), h],
    [limitBuy('t0', 1, price), h],
  ]);
}

// Expected events and views, written out by hand in the tests.

export const EMPTY: BookSnapshot = {
  bids: [],
  asks: [],
  bestBid: null,
  bestAsk: null,
  spread: null,
  midPrice: null,
  lastTrade: null,
};

/** A snapshot: empty unless told. */
export const snap = (s: Partial<BookSnapshot>): BookSnapshot => ({ ...EMPTY, ...s });

export const rested = (atMs: Millis, orderId: string, price: Cents, nodes: number): BookEvent => ({
  type: 'rested',
  at: atMs,
  orderId,
  price,
  nodes,
});

/** A fill as a test writes it: its lease starts at the match unless told (D27). */
export type ExpectedFill = Omit<Fill, 'leaseStartAt'> & { readonly leaseStartAt?: Millis };

export const matched = (
  atMs: Millis,
  buyOrderId: string,
  fills: readonly ExpectedFill[],
  buyRemaining: number,
): BookEvent => ({
  type: 'matched',
  at: atMs,
  buyOrderId,
  fills: fills.map((f) => ({ ...f, leaseStartAt: f.leaseStartAt ?? atMs })),
  buyRemaining,
});

export const cancelled = (
  atMs: Millis,
  orderId: string,
  reason: EngineCancelReason,
  nodes: number,
): BookEvent => ({ type: 'cancelled', at: atMs, orderId, reason, nodes });

/** A fill from sell `sellOrderId` (cluster `cl-<id>` unless given). */
export const fill = (
  sellOrderId: string,
  nodes: number,
  price: Cents,
  sellRemaining: number,
  clusterId = `cl-${sellOrderId}`,
  leaseStartAt?: Millis,
): ExpectedFill => ({
  sellOrderId,
  clusterId,
  nodes,
  price,
  sellRemaining,
  ...(leaseStartAt === undefined ? {} : { leaseStartAt }),
});

export const level = (price: Cents, gpus: number, orders: number): Level => ({
  price,
  gpus,
  orders,
});

/**
 * A bare order record for the timer structures' tests: a 1-node limit buy
 * accepted at `acceptedAt`. With `absolute`, it names a start, so its expiry
 * is not counted from acceptance.
 */
export function orderRec(
  acceptSeq: number,
  acceptedAt = 0,
  expiresAt = 0,
  absolute = false,
): OrderRec {
  const input: OrderInput = {
    id: `o${acceptSeq}`,
    side: 'buy',
    type: 'limit',
    accountId: 'a',
    orgId: 'g',
    nodes: 1,
    durationHours: 1,
    limitPrice: 100,
    ...(absolute ? { startAt: acceptedAt } : {}),
  };
  return new OrderRec(input, acceptedAt, acceptSeq, acceptedAt, expiresAt, 100, 1);
}
