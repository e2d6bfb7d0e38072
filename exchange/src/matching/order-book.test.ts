// Given/when/then tests of the matching engine against docs/matching.md (the
// exact rules), service-spec.md rules 1–4, 8 and Limits, and decisions.md
// D5–D17. Every expected value is worked out by hand from the doc in the test.
//
// given: orders placed into a fresh book; when: one command; then: its result,
// its events and the snapshot afterwards.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  T0,
  at,
  cancelled,
  fill,
  givenOrders,
  level,
  limitBuy,
  marketBuy,
  matched,
  place,
  rested,
  sell,
} from './testing/given.js';
import type { BookSnapshot, OrderInput, PlaceResult, RejectCode } from './types.js';

const EMPTY: BookSnapshot = {
  bids: [],
  asks: [],
  bestBid: null,
  bestAsk: null,
  spread: null,
  midPrice: null,
  lastTrade: null,
};

/** A snapshot: empty unless told. */
const snap = (s: Partial<BookSnapshot>): BookSnapshot => ({ ...EMPTY, ...s });

function expectRejected(r: PlaceResult, code: RejectCode): void {
  expect(r).toMatchObject({ ok: false, code });
}

/** Both parties of one organisation `org-B`, different accounts. */
const orgB = (account: string): { accountId: string; orgId: string } => ({
  accountId: account,
  orgId: 'org-B',
});

/** given: a trade at `price` (1 node), leaving both sides empty. */
function givenTradeAt(book: OrderBook, price: number, h = 0): void {
  givenOrders(book, [
    [sell('s0', 1, price), h],
    [limitBuy('t0', 1, price), h],
  ]);
}

// ---------------------------------------------------------------------------

describe('validation (docs/matching.md "Validation"): invalid_request', () => {
  const bad: readonly (readonly [string, OrderInput])[] = [
    ['empty id', limitBuy('', 1, 100)],
    ['spec rule 4 / D5: nodes 0', limitBuy('b1', 0, 100)],
    ['spec rule 4 / D5: nodes negative', limitBuy('b1', -1, 100)],
    ['spec rule 4 / D5: nodes not an integer', limitBuy('b1', 1.5, 100)],
    ['spec rule 4 / D5: nodes NaN', limitBuy('b1', Number.NaN, 100)],
    ['nodes above 10 000', limitBuy('b1', 10_001, 100)],
    ['spec rule 4 / D5: sell nodes 0', sell('s1', 0, 100)],
    ['durationHours 0', limitBuy('b1', 1, 1000, { durationHours: 0 })],
    ['durationHours 721', limitBuy('b1', 1, 100, { durationHours: 721 })],
    ['durationHours not an integer', limitBuy('b1', 1, 100, { durationHours: 2.5 })],
    ['sell window 721 h', sell('s1', 1, 100, { durationHours: 721 })],
    ['limit buy without limitPrice', limitBuy('b1', 1, 100, { limitPrice: undefined })],
    ['limitPrice 0', limitBuy('b1', 1, 0)],
    ['limitPrice negative', limitBuy('b1', 1, -100)],
    ['limitPrice not an integer', limitBuy('b1', 1, 100.5)],
    ['limitPrice above 100 000 000', limitBuy('b1', 1, 100_000_001)],
    ['market buy with a limitPrice', marketBuy('b1', 1, { limitPrice: 100 })],
    ['D6: market sell', { ...sell('s1', 1, 100), type: 'market', limitPrice: undefined }],
    ['D6: market sell with a price', { ...sell('s1', 1, 100), type: 'market' }],
    ['D6: sell without limitPrice', sell('s1', 1, 100, { limitPrice: undefined })],
    ['D6: sell with allowPartial', sell('s1', 1, 100, { allowPartial: true })],
    ['sell with flexibleWindowHours', sell('s1', 1, 100, { flexibleWindowHours: 2 })],
    ['sell without clusterId', sell('s1', 1, 100, { clusterId: undefined })],
    ['D27: limit buy with allOrNothing', limitBuy('b1', 1, 100, { allOrNothing: true })],
    ['D27: market buy with allOrNothing', marketBuy('b1', 1, { allOrNothing: true })],
    ['flexibleWindowHours 0', limitBuy('b1', 1, 100, { flexibleWindowHours: 0 })],
    ['flexibleWindowHours 721', limitBuy('b1', 1, 100, { flexibleWindowHours: 721 })],
    ['flexibleWindowHours not an integer', limitBuy('b1', 1, 100, { flexibleWindowHours: 1.5 })],
    ['D12: expiresAt equal to now', limitBuy('b1', 1, 100, { expiresAt: T0 })],
    ['D12: expiresAt before now', limitBuy('b1', 1, 100, { expiresAt: T0 - 1 })],
  ];

  it.each(bad)('rejects %s with invalid_request and leaves no trace', (_name, order) => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(order, T0);
    // then
    expect(r).toMatchObject({ ok: false, code: 'invalid_request', events: [] });
    expect(book.snapshot(10)).toEqual(EMPTY);
    expect(book.openOrders()).toEqual([]);
  });

  it('throws on the id of an order still open: the caller keeps ids unique', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when / then
    expect(() => book.place(limitBuy('b1', 2, 99), at(1))).toThrow(/already open/);
  });

  it('throws on the id of a scheduled order before changing the book', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { startAt: at(5) }), 0]]);
    // when / then
    expect(() => book.place(limitBuy('b1', 1, 100, { startAt: at(6) }), at(1))).toThrow(
      /already open/,
    );
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('accepts the upper bounds: 10 000 nodes, 720 h, limit price 100 000 000', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(limitBuy('b1', 10_000, 100_000_000, { durationHours: 720 }), T0);
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(T0, 'b1', 100_000_000, 10_000)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({ bids: [level(100_000_000, 80_000, 1)], bestBid: 100_000_000 }),
    );
  });
  it('accepts the id of an order that is no longer open (cancelled)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    book.cancel('b1', at(0));
    // when
    const r = book.place(limitBuy('b1', 1, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 'b1', 100, 1)],
    });
  });
});

// ---------------------------------------------------------------------------

describe("spec rule 1 / D7: match when bid ≥ ask, at the seller's ask", () => {
  it('spec rule 1: a buy whose limit equals the ask matches at that price', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 2, 100), 0]]);
    // when
    const r = book.place(limitBuy('b1', 2, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s1', 2, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 16, at: at(1) } }));
  });

  it("D7: a buy with a higher limit pays the seller's ask", () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100), 0]]);
    // when
    const r = book.place(limitBuy('b1', 1, 130), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(1) } }));
  });

  it("D7: a sell arriving into a higher resting bid trades at the seller's ask, not the bid", () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 120), 0]]);
    // when
    const r = book.place(sell('s1', 1, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(1) } }));
  });

  it('spec rule 1: a bid below the ask does not match; both rest', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 90), 0]]);
    // when
    const r = book.place(sell('s1', 1, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 's1', 100, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(90, 8, 1)],
        asks: [level(100, 8, 1)],
        bestBid: 90,
        bestAsk: 100,
        spread: 10,
        midPrice: 95,
      }),
    );
  });
});

// ---------------------------------------------------------------------------

describe('spec rule 2 / D8: price-time priority', () => {
  it('D8: an arriving buy takes asks lowest price first, FIFO at equal price', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 110), 0],
      [sell('s2', 1, 100), 0],
      [sell('s3', 1, 100), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 110), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s2', 1, 100, 0), fill('s3', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(110, 8, 1)],
        bestAsk: 110,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D8: an arriving sell serves bids highest price first, FIFO at equal price', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [limitBuy('b2', 1, 110), 0],
      [limitBuy('b3', 1, 110), 0],
    ]);
    // when
    const r = book.place(sell('s1', 2, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [
        matched(at(1), 'b2', [fill('s1', 1, 100, 1)], 0),
        matched(at(1), 'b3', [fill('s1', 1, 100, 0)], 0),
      ],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 8, 1)],
        bestBid: 100,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('spec rule 2: a sell smaller than the queue of allowPartial buys at its price fills the earliest in full, the next in part, later ones nothing', () => {
    // given: four 2-node allowPartial bids at 100, in time order
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 2, 100, { allowPartial: true }), 0],
      [limitBuy('b2', 2, 100, { allowPartial: true }), 0],
      [limitBuy('b3', 2, 100, { allowPartial: true }), 0],
      [limitBuy('b4', 2, 100, { allowPartial: true }), 0],
    ]);
    // when: a 5-node sell at 100
    const r = book.place(sell('s1', 5, 100), at(1));
    // then: b1 2, b2 2, b3 1 of 2, b4 nothing
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 5,
      events: [
        matched(at(1), 'b1', [fill('s1', 2, 100, 3)], 0),
        matched(at(1), 'b2', [fill('s1', 2, 100, 1)], 0),
        matched(at(1), 'b3', [fill('s1', 1, 100, 0)], 1),
      ],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 24, 2)],
        bestBid: 100,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('spec rule 2: the part-filled bid keeps its place ahead of later bids', () => {
    // given: the rule-2 example after the 5-node sell
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 2, 100, { allowPartial: true }), 0],
      [limitBuy('b2', 2, 100, { allowPartial: true }), 0],
      [limitBuy('b3', 2, 100, { allowPartial: true }), 0],
      [limitBuy('b4', 2, 100, { allowPartial: true }), 0],
      [sell('s1', 5, 100), 1],
    ]);
    // when
    const r = book.place(sell('s2', 1, 100), at(2));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(2), 'b3', [fill('s2', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 16, 1)],
        bestBid: 100,
        lastTrade: { price: 100, gpus: 8, at: at(2) },
      }),
    );
  });
});

// ---------------------------------------------------------------------------

describe('spec rule 4 / D5: whole 8-GPU nodes', () => {
  it('rule 4 / D5: the engine counts nodes; the snapshot shows GPUs = nodes × 8 per level', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 100), 0],
      [limitBuy('b2', 2, 100), 0],
      [limitBuy('b3', 1, 99), 0],
      [sell('s1', 4, 120), 0],
    ]);
    // when
    const r = book.place(sell('s2', 1, 120), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 's2', 120, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 40, 2), level(99, 8, 1)],
        asks: [level(120, 40, 2)],
        bestBid: 100,
        bestAsk: 120,
        spread: 20,
        midPrice: 110,
      }),
    );
  });

  it('rule 4: fills are counted in nodes and lastTrade in GPUs', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 5, 100), 0]]);
    // when
    const r = book.place(limitBuy('b1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s1', 3, 100, 2)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 16, 1)],
        bestAsk: 100,
        lastTrade: { price: 100, gpus: 24, at: at(1) },
      }),
    );
  });
});

// ---------------------------------------------------------------------------

describe('D6: sells are limit orders over a window; a buy must fit what is left of it', () => {
  it('D6: a buy matches when its duration fits what is left of the window (7 h ≤ 10 h − 3 h)', () => {
    // given: a sell with a 10 h window from T0
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10 }), 0]]);
    // when: 3 h later, a 7 h buy
    const r = book.place(limitBuy('b1', 1, 100, { durationHours: 7 }), at(3));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(3), 'b1', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(3) } }));
  });

  it('D6: a buy does not match a sell whose remaining window is too short (8 h > 10 h − 3 h); it rests', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10 }), 0]]);
    // when
    const r = book.place(limitBuy('b1', 1, 100, { durationHours: 8 }), at(3));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(3), 'b1', 100, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 8, 1)],
        asks: [level(100, 8, 1)],
        bestBid: 100,
        bestAsk: 100,
        spread: 0,
        midPrice: 100,
      }),
    );
  });

  it("D6: a sell's window shrinks as time passes: a 5 h buy fits at exactly windowEnd − 5 h", () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10 }), 0]]);
    // when
    const r = book.place(limitBuy('b1', 1, 100, { durationHours: 5 }), at(5));
    // then
    expect(r).toMatchObject({
      ok: true,
      state: 'filled',
      events: [matched(at(5), 'b1', [fill('s1', 1, 100, 0)], 0)],
    });
  });

  it("D6: a sell's window shrinks as time passes: 1 ms later the same 5 h buy no longer fits", () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10 }), 0]]);
    // when
    const r = book.place(limitBuy('b1', 1, 100, { durationHours: 5 }), at(5) + 1);
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(5) + 1, 'b1', 100, 1)],
    });
  });

  it('D6 / D8: an arriving buy skips an ask whose window does not fit and takes a later one', () => {
    // given: a cheaper sell with only a 2 h window, a dearer one with 48 h
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, { durationHours: 2 }), 0],
      [sell('s2', 1, 105), 0],
    ]);
    // when: a 4 h buy
    const r = book.place(limitBuy('b1', 1, 110, { durationHours: 4 }), at(0));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(0), 'b1', [fill('s2', 1, 105, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 8, 1)],
        bestAsk: 100,
        lastTrade: { price: 105, gpus: 8, at: at(0) },
      }),
    );
  });

  it('D6: an arriving sell whose window is shorter than a resting bid’s duration does not match it', () => {
    // given: a 5 h bid
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { durationHours: 5 }), 0]]);
    // when: a sell with a 4 h window
    const r = book.place(sell('s1', 1, 100, { durationHours: 4 }), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 's1', 100, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 8, 1)],
        asks: [level(100, 8, 1)],
        bestBid: 100,
        bestAsk: 100,
        spread: 0,
        midPrice: 100,
      }),
    );
  });

  it('D6: a sell whose startAt is past rests now, but its window does not slide', () => {
    // given: a 10 h sell whose startAt is 5 h in the past: 5 h are left
    const book = new OrderBook();
    const s = place(book, sell('s1', 1, 100, { durationHours: 10, startAt: at(-5) }), at(0));
    expect(s).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(0), 's1', 100, 1)],
    });
    // when: a 6 h buy (does not fit), then a 5 h buy (fits exactly)
    const long = book.place(limitBuy('b1', 1, 100, { durationHours: 6 }), at(0));
    const fitting = book.place(limitBuy('b2', 1, 100, { durationHours: 5 }), at(0));
    // then
    expect(long).toMatchObject({ ok: true, state: 'resting' });
    expect(fitting).toMatchObject({
      ok: true,
      state: 'filled',
      events: [matched(at(0), 'b2', [fill('s1', 1, 100, 0)], 0)],
    });
  });

  it('D6: a sell whose window leaves less than the shortest lease (1 h) is invalid', () => {
    // given
    const book = new OrderBook();
    // when: 10 h window that started 9.5 h ago
    const r = book.place(sell('s1', 1, 200, { durationHours: 10, startAt: at(-9.5) }), at(0));
    // then
    expectRejected(r, 'invalid_request');
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D13: a buy whose startAt is past starts now', () => {
    // given: a 10 h sell from now
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10 }), 0]]);
    // when: a 10 h buy that says it started 5 h ago
    const r = book.place(limitBuy('b1', 1, 100, { durationHours: 10, startAt: at(-5) }), at(0));
    // then: the lease runs from now, so it fits
    expect(r).toMatchObject({ ok: true, state: 'filled' });
  });
});

// ---------------------------------------------------------------------------

describe('D9 / spec rule 3: all-or-nothing by default, allowPartial opt-in', () => {
  it('D9: a multi-node buy fills in one matching step from several sells', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 2, 105), 0],
      [sell('s3', 2, 110), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 4, 110), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 4,
      events: [
        matched(
          at(1),
          'b1',
          [fill('s1', 1, 100, 0), fill('s2', 2, 105, 0), fill('s3', 1, 110, 1)],
          0,
        ),
      ],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(110, 8, 1)],
        bestAsk: 110,
        lastTrade: { price: 110, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D9: an all-or-nothing buy with too little compatible liquidity fills nothing and rests whole', () => {
    // given: 1 node at 100 and 1 node at 120 (above the buy's limit)
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 120), 0],
    ]);
    // when: a 2-node buy at 110
    const r = book.place(limitBuy('b1', 2, 110), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 'b1', 110, 2)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 16, 1)],
        asks: [level(100, 8, 1), level(120, 8, 1)],
        bestBid: 110,
        bestAsk: 100,
        spread: -10,
        midPrice: 105,
      }),
    );
  });

  it('D9: with allowPartial the buy fills what is compatible and rests the remainder', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 120), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 110, { allowPartial: true }), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 1), rested(at(1), 'b1', 110, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 8, 1)],
        asks: [level(120, 8, 1)],
        bestBid: 110,
        bestAsk: 120,
        spread: 10,
        midPrice: 115,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D9: an arriving sell passes over an all-or-nothing bid it cannot fill and fills a later bid', () => {
    // given: AON 3 nodes at 110 first, then 1 node at 100
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110), 0],
      [limitBuy('b2', 1, 100), 0],
    ]);
    // when: a 2-node sell at 100 (b1's usable liquidity is 2 < 3)
    const r = book.place(sell('s1', 2, 100), at(1));
    // then: b2 takes 1, the rest of the sell rests, b1 still waits
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 1,
      events: [matched(at(1), 'b2', [fill('s1', 1, 100, 1)], 0), rested(at(1), 's1', 100, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 24, 1)],
        asks: [level(100, 8, 1)],
        bestBid: 110,
        bestAsk: 100,
        spread: -10,
        midPrice: 105,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D9: the passed-over bid keeps its place and fills from the resting ask plus the next sell', () => {
    // given: the situation above
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110), 0],
      [limitBuy('b2', 1, 100), 0],
      [sell('s1', 2, 100), 1],
    ]);
    // when: another 2-node sell at 100: usable = s1 (1) + s2 (2) = 3
    const r = book.place(sell('s2', 2, 100), at(2));
    // then: resting s1 first (same price, earlier), then s2
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(2), 'b1', [fill('s1', 1, 100, 0), fill('s2', 2, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 16, at: at(2) } }));
  });

  it('D9: an AON bid fillable only by the new sell plus a cheaper resting ask (too small alone) fills from both in ask priority', () => {
    // given: 1 node at 100 resting, an AON bid for 3 at 120 that it cannot fill
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 3, 120), 0],
    ]);
    // when: 2 nodes at 110 arrive
    const r = book.place(sell('s2', 2, 110), at(1));
    // then: one step, cheaper resting ask first, each at its own price
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0), fill('s2', 2, 110, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 110, gpus: 16, at: at(1) } }));
  });

  it('D9: the arriving sell sits among the usable asks at its price: cheaper first, then it, then dearer ones up to the bid', () => {
    // given: asks 1 @100 and 2 @115, an AON bid for 4 at 120 (3 < 4)
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s3', 2, 115), 0],
      [limitBuy('b1', 4, 120), 0],
    ]);
    // when: 1 node at 110
    const r = book.place(sell('s2', 1, 110), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [
        matched(
          at(1),
          'b1',
          [fill('s1', 1, 100, 0), fill('s2', 1, 110, 0), fill('s3', 2, 115, 0)],
          0,
        ),
      ],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 115, gpus: 16, at: at(1) } }));
  });

  it('D9: after the walk no fillable cross is left: the sell goes on with what is left to the next AON bid', () => {
    // given: ask 1 @100; AON bids 3 @120 and 2 @110, neither fillable
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 3, 120), 0],
      [limitBuy('b2', 2, 110), 0],
    ]);
    // when: 4 nodes at 105: b1 takes s1 1 + s2 2, then b2 takes s2's last 2
    const r = book.place(sell('s2', 4, 105), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 4,
      events: [
        matched(at(1), 'b1', [fill('s1', 1, 100, 0), fill('s2', 2, 105, 2)], 0),
        matched(at(1), 'b2', [fill('s2', 2, 105, 0)], 0),
      ],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 105, gpus: 16, at: at(1) } }));
  });
  it('D9: an arriving sell does not count resting asks that do not fit the AON bid as usable liquidity', () => {
    // given: 1 node @100 with a 2 h window (does not fit a 4 h bid), AON bid 3 @120
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, { durationHours: 2 }), 0],
      [limitBuy('b1', 3, 120, { durationHours: 4 }), 0],
    ]);
    // when: 2 nodes at 110: usable = 2 (s1 does not fit) < 3
    const r = book.place(sell('s2', 2, 110), at(0));
    // then: b1 is passed over, s2 rests
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(0), 's2', 110, 2)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(120, 24, 1)],
        asks: [level(100, 8, 1), level(110, 16, 1)],
        bestBid: 120,
        bestAsk: 100,
        spread: -20,
        midPrice: 110,
      }),
    );
  });

  it('D9 / D13: a scheduled sell arriving at startAt fills an AON bid together with a resting ask', () => {
    // given: 1 node @100 resting, AON bid 2 @100 (1 < 2), 1 node @100 scheduled for T0 + 1 h
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 2, 100), 0],
      [sell('s2', 1, 100, { startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1));
    // then
    expect(events).toEqual([
      matched(at(1), 'b1', [fill('s1', 1, 100, 0), fill('s2', 1, 100, 0)], 0),
    ]);
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(1) } }));
  });
  it('D9: usable liquidity is what is left at this point of the walk: an earlier AON fill uses up the resting ask', () => {
    // given: ask 1 @100; AON bids 2 @120 and 2 @110
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 2, 120), 0],
      [limitBuy('b2', 2, 110), 0],
    ]);
    // when: 2 nodes at 105: b1 takes s1 + 1 of s2; for b2 only s2's last node is left (1 < 2)
    const r = book.place(sell('s2', 2, 105), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 1,
      events: [
        matched(at(1), 'b1', [fill('s1', 1, 100, 0), fill('s2', 1, 105, 1)], 0),
        rested(at(1), 's2', 105, 1),
      ],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 16, 1)],
        asks: [level(105, 8, 1)],
        bestBid: 110,
        bestAsk: 105,
        spread: -5,
        midPrice: 108,
        lastTrade: { price: 105, gpus: 8, at: at(1) },
      }),
    );
  });
});

// ---------------------------------------------------------------------------

/** An all-or-nothing sell (a resale, D27). */
const aonSell = (
  id: string,
  nodes: number,
  price: number,
  extra: Parameters<typeof sell>[3] = {},
): OrderInput => sell(id, nodes, price, { allOrNothing: true, ...extra });

describe('D27 / D9: all-or-nothing sells, arrival of a buy ("Choosing the fills")', () => {
  it('D27: a buy of exactly the all-or-nothing ask’s nodes takes it whole in one fill', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[aonSell('s1', 3, 100), 0]]);
    // when
    const r = book.place(limitBuy('b1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s1', 3, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 24, at: at(1) } }));
  });

  it('D27: a buy smaller than an all-or-nothing ask passes it over (it keeps its place) and takes the next ask', () => {
    // given: AON 3 @100, divisible 2 @101
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 3, 100), 0],
      [sell('s2', 2, 101), 0],
    ]);
    // when: 2 nodes up to 101
    const r = book.place(limitBuy('b1', 2, 101), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s2', 2, 101, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 24, 1)],
        bestAsk: 100,
        lastTrade: { price: 101, gpus: 16, at: at(1) },
      }),
    );
  });

  it('D27 / D9: a bid with only a larger all-or-nothing ask below it rests: a cross that cannot trade', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[aonSell('s1', 3, 100), 0]]);
    // when: 2 nodes at 105
    const r = book.place(limitBuy('b1', 2, 105), at(1));
    // then: spread -5, mid 102.5 → 102
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 'b1', 105, 2)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(105, 16, 1)],
        asks: [level(100, 24, 1)],
        bestBid: 105,
        bestAsk: 100,
        spread: -5,
        midPrice: 102,
      }),
    );
  });

  it('D27 / D9: a buy larger than an all-or-nothing ask takes it whole plus part of a divisible one, in one step', () => {
    // given: AON 3 @100, divisible 4 @101
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 3, 100), 0],
      [sell('s2', 4, 101), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 5, 101), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 5,
      events: [matched(at(1), 'b1', [fill('s1', 3, 100, 0), fill('s2', 2, 101, 2)], 0)],
    });
  });

  it('D27 / D8: an earlier ask gives nothing where its node would leave a rest the later asks cannot make up (1 @100, AON 3 @101, buy 3)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [aonSell('s2', 3, 101), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 3, 101), at(1));
    // then: the 3 whole; taking s1 would leave 2, which nothing makes up
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s2', 3, 101, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 8, 1)],
        bestAsk: 100,
        lastTrade: { price: 101, gpus: 24, at: at(1) },
      }),
    );
  });

  it('D27: all-or-nothing asks combine; one larger than what is left is passed over (AON 2 @100, AON 4 @101, AON 3 @102, buy 5)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 2, 100), 0],
      [aonSell('s2', 4, 101), 0],
      [aonSell('s3', 3, 102), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 5, 102), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 5,
      events: [matched(at(1), 'b1', [fill('s1', 2, 100, 0), fill('s3', 3, 102, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(101, 32, 1)],
        bestAsk: 101,
        lastTrade: { price: 102, gpus: 24, at: at(1) },
      }),
    );
  });

  it('D27 / D9: an allowPartial buy fills the most it can reach and rests the rest, crossed with the ask it cannot take whole', () => {
    // given: AON 3 @100, divisible 1 @101
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 3, 100), 0],
      [sell('s2', 1, 101), 0],
    ]);
    // when: 2 nodes, partial fills allowed
    const r = book.place(limitBuy('b1', 2, 101, { allowPartial: true }), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s2', 1, 101, 0)], 1), rested(at(1), 'b1', 101, 1)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(101, 8, 1)],
        asks: [level(100, 24, 1)],
        bestBid: 101,
        bestAsk: 100,
        spread: -1,
        midPrice: 100,
        lastTrade: { price: 101, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D27: an allowPartial buy takes the most it can reach, not the first ask (1 @100, AON 3 @101, buy 3)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [aonSell('s2', 3, 101), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 3, 101, { allowPartial: true }), at(1));
    // then: 3 reachable only without s1
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s2', 3, 101, 0)], 0)],
    });
  });

  it('D27 / D10: a market buy no selection fills is rejected; missingGpus from the most it can reach (AON 2 + AON 2, buy 3)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 2, 100), 0],
      [aonSell('s2', 2, 101), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 3), at(1));
    // then: 2 or 4 reachable, not 3; the most up to 3 is 2, 1 node missing
    expect(r).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 8,
      events: [],
    });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 16, 1), level(101, 16, 1)], bestAsk: 100 }),
    );
  });

  it('D27 / D17: an own all-or-nothing ask the buy could not take anyway does not block it', () => {
    // given: own-org AON 3 @100, foreign 2 @101
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 3, 100, orgB('acct-s1')), 0],
      [sell('s2', 2, 101), 0],
    ]);
    // when: 2 nodes of org-B
    const r = book.place(limitBuy('b1', 2, 101, orgB('acct-b1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s2', 2, 101, 0)], 0)],
    });
  });

  it('D27 / D17: an own all-or-nothing ask the plan would take rejects the buy', () => {
    // given: own-org AON 2 @100, foreign 2 @101
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 2, 100, orgB('acct-s1')), 0],
      [sell('s2', 2, 101), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 101, orgB('acct-b1')), at(1));
    // then
    expectRejected(r, 'self_trade_prevented');
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 16, 1), level(101, 16, 1)], bestAsk: 100 }),
    );
  });

  it('D27 / D17: an own divisible ask the plan passes over (for a foreign all-or-nothing one) does not block', () => {
    // given: own-org 1 @100, foreign AON 3 @101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, orgB('acct-s1')), 0],
      [aonSell('s2', 3, 101), 0],
    ]);
    // when: 3 nodes of org-B
    const r = book.place(limitBuy('b1', 3, 101, orgB('acct-b1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s2', 3, 101, 0)], 0)],
    });
  });

  it('D27 / estimate: the fills are the plan; totalAvailable leaves out an all-or-nothing ask larger than the query', () => {
    // given: AON 2 @100, AON 2 @101, AON 4 @102
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 2, 100), 0],
      [aonSell('s2', 2, 101), 0],
      [aonSell('s3', 4, 102), 0],
    ]);
    // when: 3 nodes for 4 h
    const est = book.estimate({ nodes: 3, durationHours: 4 }, at(1));
    // then: 3 is not reachable; the plan for 2 takes s1; 4 of 3 nodes' worth available
    expect(est).toEqual({
      fills: [{ price: 100, gpus: 16 }],
      estimatedPrice: 100,
      bestAsk: 100,
      worstFillPrice: 100,
      totalAvailable: 32,
      sufficientLiquidity: false,
      missingGpus: 8,
      computeCostCents: 100 * 16 * 4,
    });
  });

  it('D27 / D14: a flexible buy’s R skips an all-or-nothing ask it cannot take whole', () => {
    // given: AON 3 @100, divisible 2 @120
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s1', 3, 100), 0],
      [sell('s2', 2, 120), 0],
    ]);
    // when: a flexible 2-node buy without a limit
    const r = book.place(marketBuy('b1', 2, { flexibleWindowHours: 3 }), at(0));
    // then: R = 120, and the asks at ≤ R already cover it
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      referencePrice: 120,
      events: [matched(at(0), 'b1', [fill('s2', 2, 120, 0)], 0)],
    });
  });
});

describe('D27 / D9: all-or-nothing sells, arrival of a sell', () => {
  it('D27: an all-or-nothing sell passes over an allowPartial bid smaller than it and goes whole to the next', () => {
    // given: allowPartial 2 @110, allowPartial 5 @105
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 2, 110, { allowPartial: true }), 0],
      [limitBuy('b2', 5, 105, { allowPartial: true }), 0],
    ]);
    // when: AON 3 @100
    const r = book.place(aonSell('s1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b2', [fill('s1', 3, 100, 0)], 2)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 16, 1), level(105, 16, 1)],
        bestBid: 110,
        lastTrade: { price: 100, gpus: 24, at: at(1) },
      }),
    );
  });

  it('D27: once the all-or-nothing sell is filled the walk stops', () => {
    // given: two allowPartial bids of 3
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110, { allowPartial: true }), 0],
      [limitBuy('b2', 3, 105, { allowPartial: true }), 0],
    ]);
    // when
    const r = book.place(aonSell('s1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s1', 3, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(105, 24, 1)],
        bestBid: 105,
        lastTrade: { price: 100, gpus: 24, at: at(1) },
      }),
    );
  });

  it('D27 / D9: an all-or-nothing sell passes over an all-or-nothing bid it cannot complete and fills one of its own size', () => {
    // given: AON bids 4 @110, 3 @105
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 4, 110), 0],
      [limitBuy('b2', 3, 105), 0],
    ]);
    // when
    const r = book.place(aonSell('s1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b2', [fill('s1', 3, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 32, 1)],
        bestBid: 110,
        lastTrade: { price: 100, gpus: 24, at: at(1) },
      }),
    );
  });

  it('D27 / D9: an all-or-nothing sell completes an all-or-nothing bid with a cheaper resting ask, in ask priority', () => {
    // given: 1 @100 resting, AON bid 4 @110 (1 < 4: rests)
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s0', 1, 100), 0],
      [limitBuy('b1', 4, 110), 0],
    ]);
    // when: AON 3 @102
    const r = book.place(aonSell('s1', 3, 102), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s0', 1, 100, 0), fill('s1', 3, 102, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 102, gpus: 24, at: at(1) } }));
  });

  it('D27 / D9: an all-or-nothing sell fills a bid alone, passing over a cheaper node that would leave a rest it cannot make up', () => {
    // given: AON bid 3 @110, then 1 @100 (rests: 1 < 3)
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110), 0],
      [sell('s1', 1, 100), 0],
    ]);
    // when: AON 3 @101
    const r = book.place(aonSell('s2', 3, 101), at(1));
    // then: s1's node would leave 2, which the 3 whole cannot make
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b1', [fill('s2', 3, 101, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 8, 1)],
        bestAsk: 100,
        lastTrade: { price: 101, gpus: 24, at: at(1) },
      }),
    );
  });

  it('D27 / D9: an all-or-nothing sell no bid can take whole rests whole, crossed with the bid', () => {
    // given: AON bid 2 @110
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 2, 110), 0]]);
    // when: AON 3 @100
    const r = book.place(aonSell('s1', 3, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 's1', 100, 3)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 16, 1)],
        asks: [level(100, 24, 1)],
        bestBid: 110,
        bestAsk: 100,
        spread: -10,
        midPrice: 105,
      }),
    );
  });

  it('D27 / D17: an own bid too small for the all-or-nothing sell does not block it', () => {
    // given: own-org allowPartial 1 @110, foreign allowPartial 3 @105
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 110, { ...orgB('acct-b1'), allowPartial: true }), 0],
      [limitBuy('b2', 3, 105, { allowPartial: true }), 0],
    ]);
    // when: AON 3 of org-B
    const r = book.place(aonSell('s1', 3, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b2', [fill('s1', 3, 100, 0)], 0)],
    });
  });

  it('D27 / D17: an own bid that could take the all-or-nothing sell whole rejects it', () => {
    // given: own-org allowPartial 3 @110, foreign 3 @105
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110, { ...orgB('acct-b1'), allowPartial: true }), 0],
      [limitBuy('b2', 3, 105), 0],
    ]);
    // when
    const r = book.place(aonSell('s1', 3, 100, orgB('acct-s1')), at(1));
    // then
    expectRejected(r, 'self_trade_prevented');
    expect(book.snapshot(10)).toEqual(
      snap({ bids: [level(110, 24, 1), level(105, 24, 1)], bestBid: 110 }),
    );
  });

  it('D27 / D9: a divisible sell counts a resting all-or-nothing ask whole: it completes an all-or-nothing bid with it', () => {
    // given: AON 3 @100, AON bid 4 @110 (3 ≠ 4: rests, crossed)
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s0', 3, 100), 0],
      [limitBuy('b1', 4, 110), 0],
    ]);
    // when: 1 node @101
    const r = book.place(sell('s1', 1, 101), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s0', 3, 100, 0), fill('s1', 1, 101, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 101, gpus: 8, at: at(1) } }));
  });

  it('D27 / D9: a divisible sell fills an all-or-nothing bid alone, passing over a larger all-or-nothing ask that stays', () => {
    // given: AON 3 @100, AON bid 2 @110 (crossed, cannot trade)
    const book = new OrderBook();
    givenOrders(book, [
      [aonSell('s0', 3, 100), 0],
      [limitBuy('b1', 2, 110), 0],
    ]);
    // when: 2 nodes @101
    const r = book.place(sell('s1', 2, 101), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s1', 2, 101, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 24, 1)],
        bestAsk: 100,
        lastTrade: { price: 101, gpus: 16, at: at(1) },
      }),
    );
  });
});

describe('D27: all-or-nothing sells over time and restore', () => {
  it('D27 / D12: an all-or-nothing sell expires whole at its expiresAt (available_until)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[aonSell('s1', 3, 100, { expiresAt: at(2) }), 0]]);
    // when
    const events = book.advance(at(3));
    // then
    expect(events).toEqual([cancelled(at(2), 's1', 'expired', 3)]);
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D27 / restore: openOrders carries the flag and a restored book keeps the ask whole', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[aonSell('s1', 3, 100), 0]]);
    const open = book.openOrders();
    const restored = OrderBook.restore(open, book.lastTrade(), book.clock);
    // when: 2 nodes, then 3
    const r1 = restored.place(limitBuy('b1', 2, 100), at(1));
    const r2 = restored.place(limitBuy('b2', 3, 100), at(1));
    // then
    expect(open.map((o) => o.input.allOrNothing)).toEqual([true]);
    expect(r1).toMatchObject({ ok: true, state: 'resting', filledNodes: 0 });
    expect(r2).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [matched(at(1), 'b2', [fill('s1', 3, 100, 0)], 0)],
    });
  });
});

describe('D10: market buys never rest', () => {
  it('D10: a market buy fills at once at the best asks', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 2, 100), 0]]);
    // when
    const r = book.place(marketBuy('b1', 1), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 1)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 8, 1)],
        bestAsk: 100,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D10: insufficient liquidity rejects the whole market buy with missingGpus and changes nothing', () => {
    // given: 2 nodes on offer
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 110), 0],
    ]);
    // when: a market buy for 3
    const r = book.place(marketBuy('b1', 3), at(1));
    // then
    expect(r).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 8,
      events: [],
    });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 8, 1), level(110, 8, 1)], bestAsk: 100 }),
    );
  });

  it('D10: missingGpus counts only asks that fit the buy', () => {
    // given: 2 nodes whose window is too short for a 4 h buy, 1 node that fits
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 2, 100, { durationHours: 2 }), 0],
      [sell('s2', 1, 110), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 3, { durationHours: 4 }), at(0));
    // then: (3 − 1) × 8
    expect(r).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 16,
      events: [],
    });
  });

  it('D10: with allowPartial a market buy fills what it can and the remainder is cancelled (insufficient_liquidity)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 110), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 3, { allowPartial: true }), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'cancelled',
      filledNodes: 2,
      events: [
        matched(at(1), 'b1', [fill('s1', 1, 100, 0), fill('s2', 1, 110, 0)], 1),
        cancelled(at(1), 'b1', 'insufficient_liquidity', 1),
      ],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 110, gpus: 8, at: at(1) } }));
  });

  it('D10: an allowPartial market buy that can fill nothing is rejected with missingGpus', () => {
    // given: an empty book
    const book = new OrderBook();
    // when
    const r = book.place(marketBuy('b1', 2, { allowPartial: true }), T0);
    // then
    expect(r).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 16,
      events: [],
    });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });
  it('D10 / D15: with no trade, a market buy uses the exact mid as reference (bid 100, ask 101 → ask 200 is outside)', () => {
    // given: ask 200 and bid 100 (no reference yet), then ask 101 (mid 150 then: inside)
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 200), 0],
      [limitBuy('b1', 1, 100), 0],
      [sell('s2', 1, 101), 0],
    ]);
    // when: mid 100.5 → collar 50.25…150.75
    const r = book.place(marketBuy('m1', 2), at(1));
    // then
    expect(r).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 8,
      events: [],
    });
  });
});

// ---------------------------------------------------------------------------

describe('D11: one matching step, fills named by cluster', () => {
  it('D11: one matching step lists the fills from several sells with their clusterIds, in the order taken', () => {
    // given: one provider's cluster cA offers twice, another provider's cB once
    const book = new OrderBook();
    const providerA = { accountId: 'acct-pA', orgId: 'org-pA' };
    givenOrders(book, [
      [sell('s1', 1, 100, { ...providerA, clusterId: 'cA' }), 0],
      [sell('s2', 1, 100, { clusterId: 'cB' }), 0],
      [sell('s3', 2, 101, { ...providerA, clusterId: 'cA' }), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 3, 101), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 3,
      events: [
        matched(
          at(1),
          'b1',
          [fill('s1', 1, 100, 0, 'cA'), fill('s2', 1, 100, 0, 'cB'), fill('s3', 1, 101, 1, 'cA')],
          0,
        ),
      ],
    });
  });
});

// ---------------------------------------------------------------------------

describe('D12: expiry', () => {
  it('D12: a limit buy expires exactly 24 h after acceptance', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 2, 100), 0]]);
    // when
    const events = book.advance(at(24));
    // then
    expect(events).toEqual([cancelled(at(24), 'b1', 'expired', 2)]);
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D12: a limit buy is still there 1 ms before its 24 h', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 2, 100), 0]]);
    // when
    const events = book.advance(at(24) - 1);
    // then
    expect(events).toEqual([]);
    expect(book.snapshot(10)).toEqual(snap({ bids: [level(100, 16, 1)], bestBid: 100 }));
  });

  it('D12: the expiry fires on the next command past it, reported at the expiry time, before the command', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when: a sell that would have matched b1, 30 h later
    const r = book.place(sell('s1', 1, 100), at(30));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [cancelled(at(24), 'b1', 'expired', 1), rested(at(30), 's1', 100, 1)],
    });
  });

  it('D12: a part-filled allowPartial buy expires with its remaining nodes', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 100, { allowPartial: true }), 0],
      [sell('s1', 1, 100), 1],
    ]);
    // when
    const events = book.advance(at(24));
    // then
    expect(events).toEqual([cancelled(at(24), 'b1', 'expired', 2)]);
  });

  it('D12: a sell expires at the first instant its window cannot hold the shortest lease', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 2, 100, { durationHours: 10 }), 0]]);
    // when
    const before = book.advance(at(9));
    const events = book.advance(at(10));
    // then: at end − 1 h a 1 h lease still fits; 1 ms later none does
    expect(before).toEqual([]);
    expect(events).toEqual([cancelled(at(9) + 1, 's1', 'expired', 2)]);
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D6 / D12: a 1 h lease still fills at the last instant it fits, also from a scheduled 1 h sell', () => {
    // given: a resting 1 h bid, and a 1 h sell that starts at 2 h
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 300, { durationHours: 1 }), 0],
      [sell('s1', 1, 200, { durationHours: 1, startAt: at(2) }), 0],
    ]);
    // when
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([matched(at(2), 'b1', [fill('s1', 1, 200, 0)], 0)]);
  });

  it('D12: a sell whose expiresAt comes before its start is invalid', () => {
    const book = new OrderBook();
    const r = book.place(sell('s1', 1, 200, { startAt: at(5), expiresAt: at(1) }), at(0));
    expectRejected(r, 'invalid_request');
  });

  it('D12: a sell with an expiresAt after its last hour still leaves when no lease fits', () => {
    // given: a resale-like sell whose available_until is past its window
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10, expiresAt: at(20) }), 0]]);
    // when
    const events = book.advance(at(20));
    // then
    expect(events).toEqual([cancelled(at(9) + 1, 's1', 'expired', 1)]);
  });

  it('D12 / D13: a scheduled sell arrives at startAt and expires 1 ms after startAt + window − 1 h', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 10, startAt: at(2) }), 0]]);
    // when
    const events = book.advance(at(13));
    // then
    expect(events).toEqual([
      rested(at(2), 's1', 100, 1),
      cancelled(at(11) + 1, 's1', 'expired', 1),
    ]);
  });

  it('D12: an explicit expiresAt overrides the default (limit buy)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { expiresAt: at(2) }), 0]]);
    // when
    const events = book.advance(at(3));
    // then
    expect(events).toEqual([cancelled(at(2), 'b1', 'expired', 1)]);
  });

  it('D12: an explicit expiresAt before the window end ends a sell early (resale available_until)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { expiresAt: at(5) }), 0]]);
    // when
    const events = book.advance(at(5));
    // then
    expect(events).toEqual([cancelled(at(5), 's1', 'expired', 1)]);
  });

  it('D12: expiresAt Infinity never expires', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { expiresAt: Number.POSITIVE_INFINITY }), 0]]);
    // when
    const events = book.advance(at(10_000));
    // then
    expect(events).toEqual([]);
    expect(book.snapshot(10)).toEqual(snap({ bids: [level(100, 8, 1)], bestBid: 100 }));
  });

  it('Time / D12: an earlier now counts as the clock; acceptance (and so expiry) is at the clock', () => {
    // given: the clock at T0 + 10 h, then an order sent with now = T0
    const book = new OrderBook();
    book.advance(at(10));
    const r = place(book, limitBuy('b1', 1, 100), at(0));
    expect(r.events).toEqual([rested(at(10), 'b1', 100, 1)]);
    expect(book.clock).toBe(at(10));
    // when
    const events = book.advance(at(34));
    // then: expires at T0 + 10 h + 24 h
    expect(events).toEqual([cancelled(at(34), 'b1', 'expired', 1)]);
  });

  it('Time: timers due at the same time fire expiries before arrivals', () => {
    // given: a bid expiring at T0 + 24 h and a sell scheduled for T0 + 24 h
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [sell('s1', 1, 100, { startAt: at(24) }), 0],
    ]);
    // when
    const events = book.advance(at(24));
    // then: b1 leaves first, so the sell finds nothing to match
    expect(events).toEqual([cancelled(at(24), 'b1', 'expired', 1), rested(at(24), 's1', 100, 1)]);
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });
  it('D12: a part-filled sell expires with its remaining nodes', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 3, 100, { durationHours: 10 }), 0],
      [limitBuy('b1', 1, 100), 1],
    ]);
    // when
    const events = book.advance(at(10));
    // then
    expect(events).toEqual([cancelled(at(9) + 1, 's1', 'expired', 2)]);
  });

  it('Time: a rejected order still reports the timers that fired before it was looked at', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when: an invalid order 30 h later
    const r = book.place(limitBuy('b2', 0, 100), at(30));
    // then
    expect(r).toMatchObject({
      ok: false,
      code: 'invalid_request',
      events: [cancelled(at(24), 'b1', 'expired', 1)],
    });
    expect(book.clock).toBe(at(30));
  });
  it('Time: the clock never goes backwards; an earlier advance fires nothing', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    book.advance(at(10));
    // when
    const events = book.advance(at(5));
    // then
    expect(events).toEqual([]);
    expect(book.clock).toBe(at(10));
  });
});

// ---------------------------------------------------------------------------

describe('D13: startAt in the future', () => {
  it('D13: a future startAt is accepted as scheduled and is not in the snapshot', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(limitBuy('b1', 1, 100, { startAt: at(2) }), at(0));
    // then
    expect(r).toEqual({ ok: true, state: 'scheduled', filledNodes: 0, events: [] });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D13: the scheduled order arrives at startAt and rests', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { startAt: at(2) }), 0]]);
    // when
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([rested(at(2), 'b1', 100, 1)]);
    expect(book.snapshot(10)).toEqual(snap({ bids: [level(100, 8, 1)], bestBid: 100 }));
  });

  it('D13: a scheduled buy does not trade before startAt', () => {
    // given: a matching ask, and the buy scheduled 1 h ahead
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 1, 100, { startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1) - 1);
    // then
    expect(events).toEqual([]);
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });

  it('D13: at startAt the scheduled buy arrives and matches', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 1, 100, { startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1));
    // then
    expect(events).toEqual([matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 0)]);
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(1) } }));
  });

  it('D13 / D8: an arrived order is later in the queue than orders that rested before its startAt', () => {
    // given: b1 accepted first but scheduled for T0 + 2 h; b2 rests at T0 + 1 h
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100, { startAt: at(2) }), 0],
      [limitBuy('b2', 1, 100), 1],
    ]);
    book.advance(at(2));
    // when
    const r = book.place(sell('s1', 1, 100), at(3));
    // then: b2 is first at 100
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(3), 'b2', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 8, 1)],
        bestBid: 100,
        lastTrade: { price: 100, gpus: 8, at: at(3) },
      }),
    );
  });

  it('D13 / D10: a scheduled market buy that cannot fill at arrival is cancelled insufficient_liquidity', () => {
    // given
    const book = new OrderBook();
    const r0 = place(book, marketBuy('b1', 2, { startAt: at(1) }), at(0));
    expect(r0).toEqual({ ok: true, state: 'scheduled', filledNodes: 0, events: [] });
    // when
    const events = book.advance(at(1));
    // then
    expect(events).toEqual([cancelled(at(1), 'b1', 'insufficient_liquidity', 2)]);
    expect(book.openOrders()).toEqual([]);
  });
  it('Time / D13: two arrivals due at the same time arrive in acceptance order', () => {
    // given: a buy then a sell, both scheduled for T0 + 1 h
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100, { startAt: at(1) }), 0],
      [sell('s1', 1, 100, { startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1));
    // then: b1 rests first, then s1 arrives into it
    expect(events).toEqual([
      rested(at(1), 'b1', 100, 1),
      matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 0),
    ]);
  });
});

// ---------------------------------------------------------------------------

describe('D14: flexible timing', () => {
  it('D14: with a limit price it rests until startAt + w and then expires (not at 24 h)', () => {
    // given: w = 30 h
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { flexibleWindowHours: 30 }), 0]]);
    // when
    const events = book.advance(at(31));
    // then
    expect(events).toEqual([cancelled(at(30), 'b1', 'expired', 1)]);
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D14: with a limit price and a future startAt it arrives at startAt and expires at startAt + w', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { startAt: at(2), flexibleWindowHours: 3 }), 0]]);
    // when
    const events = book.advance(at(6));
    // then
    expect(events).toEqual([rested(at(2), 'b1', 100, 1), cancelled(at(5), 'b1', 'expired', 1)]);
  });

  it("D14: without a limit price R = the estimate's estimatedPrice, half-even (100.5 → 100), and the buy rests at R", () => {
    // given: 1 node at 100, 1 at 101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101), 0],
    ]);
    // when: a flexible 2-node buy without a limit
    const r = book.place(marketBuy('b1', 2, { flexibleWindowHours: 3 }), at(0));
    // then: only s1 is ≤ R, 1 < 2, so it rests at R
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      referencePrice: 100,
      events: [rested(at(0), 'b1', 100, 2)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(100, 16, 1)],
        asks: [level(100, 8, 1), level(101, 8, 1)],
        bestBid: 100,
        bestAsk: 100,
        spread: 0,
        midPrice: 100,
      }),
    );
  });

  it('D14: R skips the buyer’s own asks', () => {
    // given: 100, own 104, 106 → R over 100 and 106 = 103 (with the own ask it would be 102)
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 104, orgB('acct-s2')), 0],
      [sell('s3', 1, 106), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 2, { ...orgB('acct-b1'), flexibleWindowHours: 3 }), at(0));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      referencePrice: 103,
      events: [rested(at(0), 'b1', 103, 2)],
    });
  });

  it('D14: the flexible buy fills when an ask ≤ R arrives', () => {
    // given: the flexible buy resting at R = 100
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101), 0],
      [marketBuy('b1', 2, { flexibleWindowHours: 3 }), 0],
    ]);
    // when: 1 node at 100 arrives: usable = s1 + s3 = 2
    const r = book.place(sell('s3', 1, 100), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0), fill('s3', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(101, 8, 1)],
        bestAsk: 101,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D14: at the window end what is left executes at market', () => {
    // given: the flexible buy resting at R = 100, w = 2 h
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101), 0],
      [marketBuy('b1', 2, { flexibleWindowHours: 2 }), 0],
    ]);
    // when
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([
      matched(at(2), 'b1', [fill('s1', 1, 100, 0), fill('s2', 1, 101, 0)], 0),
    ]);
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 101, gpus: 8, at: at(2) } }));
  });

  it('D14: at the window end, without enough liquidity, it is cancelled insufficient_liquidity', () => {
    // given: only 1 node on offer; R = 100 from the partial estimate
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100), 0]]);
    const r0 = place(book, marketBuy('b1', 2, { flexibleWindowHours: 2 }), at(0));
    expect(r0).toMatchObject({ state: 'resting', referencePrice: 100 });
    // when
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([cancelled(at(2), 'b1', 'insufficient_liquidity', 2)]);
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });

  it('D14: with no ask at all it waits unseen, trades with nothing, and buys at market at the window end', () => {
    // given: a flexible buy in an empty book, then a sell during its window
    const book = new OrderBook();
    const r0 = place(book, marketBuy('b1', 1, { flexibleWindowHours: 2 }), at(0));
    expect(r0.events).toEqual([]);
    expect(r0.referencePrice).toBeUndefined();
    expect(book.snapshot(10)).toEqual(EMPTY);
    const r1 = place(book, sell('s1', 1, 100), at(1));
    expect(r1.events).toEqual([rested(at(1), 's1', 100, 1)]);
    // when
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([matched(at(2), 'b1', [fill('s1', 1, 100, 0)], 0)]);
  });

  it('D14 / D16: the minimum value of a flexible buy without limit is checked with R', () => {
    // given: 1 node at 100
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100), 0]]);
    // when: 1 node × 8 × 1 h × R 100 = 800 < 1000
    const r = book.place(marketBuy('b1', 1, { durationHours: 1, flexibleWindowHours: 2 }), at(0));
    // then
    expectRejected(r, 'order_value_too_low');
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });
  it('D14: an allowPartial flexible buy at the window end takes what it can; the rest is cancelled insufficient_liquidity', () => {
    // given: 1 node @100; flexible 3-node allowPartial buy, R = 100, w = 2 h
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100), 0]]);
    // (on acceptance it fills s1 at once as a limit buy at R with allowPartial)
    const r0 = place(
      book,
      marketBuy('b1', 3, { flexibleWindowHours: 2, allowPartial: true }),
      at(0),
    );
    expect(r0).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 1,
      referencePrice: 100,
      events: [matched(at(0), 'b1', [fill('s1', 1, 100, 0)], 2), rested(at(0), 'b1', 100, 2)],
    });
    givenOrders(book, [[sell('s2', 1, 120), 1]]);
    // when
    const events = book.advance(at(2));
    // then: market step takes s2 at 120 (inside 100 ± 50 %), 1 node cancelled
    expect(events).toEqual([
      matched(at(2), 'b1', [fill('s2', 1, 120, 0)], 1),
      cancelled(at(2), 'b1', 'insufficient_liquidity', 1),
    ]);
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 120, gpus: 8, at: at(2) } }));
  });
  it('D14: without a limit, when asks at ≤ R already cover it, it fills at once', () => {
    // given: 2 nodes at 100
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 2, 100), 0]]);
    // when
    const r = book.place(marketBuy('b1', 1, { flexibleWindowHours: 3 }), at(0));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      referencePrice: 100,
      events: [matched(at(0), 'b1', [fill('s1', 1, 100, 1)], 0)],
    });
  });

  it('D14 / D17: the market step at the window end meeting its own ask is cancelled self_trade_prevented', () => {
    // given: an unseen flexible buy of org-B, then an org-B ask
    const book = new OrderBook();
    givenOrders(book, [
      [marketBuy('b1', 1, { ...orgB('acct-b1'), flexibleWindowHours: 2 }), 0],
      [sell('s1', 1, 100, orgB('acct-s1')), 1],
    ]);
    // when
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([cancelled(at(2), 'b1', 'self_trade_prevented', 1)]);
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });
});

// ---------------------------------------------------------------------------

describe('D15: price collar', () => {
  const aroundLastTrade100: readonly (readonly [string, OrderInput, boolean])[] = [
    ['buy at 49 (below 50 %)', limitBuy('x', 1, 49), false],
    ['buy at exactly 50 (−50 %)', limitBuy('x', 1, 50), true],
    ['buy at exactly 150 (+50 %)', limitBuy('x', 1, 150), true],
    ['buy at 151 (above)', limitBuy('x', 1, 151), false],
    ['sell at 49', sell('x', 1, 49), false],
    ['sell at exactly 50', sell('x', 1, 50), true],
    ['sell at exactly 150', sell('x', 1, 150), true],
    ['sell at 151', sell('x', 1, 151), false],
  ];

  it.each(aroundLastTrade100)('D15: last trade 100: %s', (_name, order, ok) => {
    // given: a trade at 100, nothing resting
    const book = new OrderBook();
    givenTradeAt(book, 100);
    // when
    const r = book.place(order, at(1));
    // then
    if (ok) {
      expect(r).toMatchObject({ ok: true, state: 'resting' });
    } else {
      expectRejected(r, 'price_out_of_collar');
      expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(0) } }));
    }
  });

  const aroundLastTrade101: readonly (readonly [string, OrderInput, boolean])[] = [
    ['buy at 50 (< 50.5)', limitBuy('x', 1, 50), false],
    ['buy at 51', limitBuy('x', 1, 51), true],
    ['sell at 151 (≤ 151.5)', sell('x', 1, 151), true],
    ['sell at 152', sell('x', 1, 152), false],
  ];

  it.each(aroundLastTrade101)(
    'D15: exact bounds, no rounding: last trade 101: %s',
    (_name, order, ok) => {
      // given
      const book = new OrderBook();
      givenTradeAt(book, 101);
      // when
      const r = book.place(order, at(1));
      // then
      if (ok) expect(r).toMatchObject({ ok: true });
      else expectRejected(r, 'price_out_of_collar');
    },
  );

  const aroundMid: readonly (readonly [string, OrderInput, boolean])[] = [
    ['buy at 50 (< 50.25)', limitBuy('x', 1, 50), false],
    ['buy at 51', limitBuy('x', 1, 51), true],
    ['sell at 150 (≤ 150.75)', sell('x', 1, 150), true],
    ['sell at 151', sell('x', 1, 151), false],
  ];

  it.each(aroundMid)(
    'D15: no trade yet: reference = exact mid 100.5 of bid 100 / ask 101: %s',
    (_name, order, ok) => {
      // given
      const book = new OrderBook();
      givenOrders(book, [
        [limitBuy('b0', 1, 100), 0],
        [sell('s0', 1, 101), 0],
      ]);
      // when
      const r = book.place(order, at(1));
      // then
      if (ok) expect(r).toMatchObject({ ok: true, state: 'resting' });
      else expectRejected(r, 'price_out_of_collar');
    },
  );

  it('D15: the last trade takes precedence over the mid (sell at 151: inside mid 105 ± 50 %, outside 100 ± 50 %)', () => {
    // given: trade at 100, then bid 70 and ask 140 (mid 105)
    const book = new OrderBook();
    givenTradeAt(book, 100);
    givenOrders(book, [
      [limitBuy('b1', 1, 70), 0],
      [sell('s1', 1, 140), 0],
    ]);
    // when
    const r = book.place(sell('s2', 1, 151), at(1));
    // then
    expectRejected(r, 'price_out_of_collar');
  });

  it('D15: the last trade takes precedence over the mid (buy at 52: outside mid 105 ± 50 %, inside 100 ± 50 %)', () => {
    // given
    const book = new OrderBook();
    givenTradeAt(book, 100);
    givenOrders(book, [
      [limitBuy('b1', 1, 70), 0],
      [sell('s1', 1, 140), 0],
    ]);
    // when
    const r = book.place(limitBuy('b2', 1, 52), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 'b2', 52, 1)],
    });
  });

  it('D15: without a trade or a two-sided book there is no collar', () => {
    // given: only a bid at 100 000
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100_000), 0]]);
    // when
    const r = book.place(limitBuy('b2', 1, 40), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(at(1), 'b2', 40, 1)],
    });
  });

  it('D15 / order of checks: price_out_of_collar is reported before order_value_too_low', () => {
    // given
    const book = new OrderBook();
    givenTradeAt(book, 100);
    // when: 1 node × 8 × 1 h × 40 = 320 and 40 < 50
    const r = book.place(limitBuy('b1', 1, 40, { durationHours: 1 }), at(1));
    // then
    expectRejected(r, 'price_out_of_collar');
  });

  it('D15: a market buy skips asks above the collar (insufficient_liquidity when nothing else)', () => {
    // given: an ask at 200 that rested before any reference, then a trade at 100
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 200), 0]]);
    givenTradeAt(book, 100);
    // when
    const r = book.place(marketBuy('b1', 1), at(1));
    // then
    expect(r).toMatchObject({
      ok: false,
      code: 'insufficient_liquidity',
      missingGpus: 8,
      events: [],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(200, 8, 1)],
        bestAsk: 200,
        lastTrade: { price: 100, gpus: 8, at: at(0) },
      }),
    );
  });

  it('D15: a market buy skips an ask below the collar and takes one at exactly +50 %', () => {
    // given: a sell at 40 scheduled before any reference, a trade at 100, a sell at 150;
    // at T0 + 1 h the sell at 40 arrives (not re-checked)
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 40, { startAt: at(1) }), 0]]);
    givenTradeAt(book, 100);
    givenOrders(book, [[sell('s3', 1, 150), 0]]);
    expect(book.advance(at(1))).toEqual([rested(at(1), 's1', 40, 1)]);
    // when
    const r = book.place(marketBuy('b1', 1), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s3', 1, 150, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(40, 8, 1)], bestAsk: 40, lastTrade: { price: 150, gpus: 8, at: at(1) } }),
    );
  });
});

// ---------------------------------------------------------------------------

describe('D16: minimum order value 1000 cents', () => {
  it('D16: 1 node × 8 × 1 h × 124 c = 992 → order_value_too_low', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(limitBuy('b1', 1, 124, { durationHours: 1 }), T0);
    // then
    expect(r).toMatchObject({ ok: false, code: 'order_value_too_low', events: [] });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('D16: 1 node × 8 × 1 h × 125 c = 1000 exactly is accepted', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(limitBuy('b1', 1, 125, { durationHours: 1 }), T0);
    // then
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      events: [rested(T0, 'b1', 125, 1)],
    });
  });

  it.each([
    ['1 h window at 124 (992)', 1, 124, false],
    ['1 h window at 125 (1000)', 1, 125, true],
    ['2 h window at 62 (992)', 2, 62, false],
    ['2 h window at 63 (1008)', 2, 63, true],
  ] as const)('D16: a sell is valued over its window: %s', (_name, hours, price, ok) => {
    // given
    const book = new OrderBook();
    // when
    const r = book.place(sell('s1', 1, price, { durationHours: hours }), T0);
    // then
    if (ok) expect(r).toMatchObject({ ok: true, state: 'resting' });
    else expectRejected(r, 'order_value_too_low');
  });

  it('D16: a market buy is checked on the cost of its fills (992 → order_value_too_low, nothing changes)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 124), 0]]);
    // when
    const r = book.place(marketBuy('b1', 1, { durationHours: 1 }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'order_value_too_low', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(124, 8, 1)], bestAsk: 124 }));
  });

  it('D16: a market buy whose fills cost exactly 1000 is accepted', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 125), 0]]);
    // when
    const r = book.place(marketBuy('b1', 1, { durationHours: 1 }), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 125, 0)], 0)],
    });
  });

  it('D16: an allowPartial market buy is checked on the fills it would get', () => {
    // given: 1 node at 124
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 124), 0]]);
    // when: 2 nodes allowPartial, 1 h: its fill would cost 992
    const r = book.place(marketBuy('b1', 2, { durationHours: 1, allowPartial: true }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'order_value_too_low', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(124, 8, 1)], bestAsk: 124 }));
  });

  it('D16 / order of checks: the liquidity check comes before the value check for a market buy', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 124), 0]]);
    // when
    const r = book.place(marketBuy('b1', 2, { durationHours: 1 }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'insufficient_liquidity', missingGpus: 8 });
  });

  it('D16: a scheduled market buy is checked on its fills when it executes, and cancelled below $10', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 124), 0],
      [marketBuy('b1', 1, { durationHours: 1, startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1));
    // then: 8 GPUs × 1 h × 124 c = 992 c < $10: cancelled, nothing fills
    expect(events).toEqual([cancelled(at(1), 'b1', 'order_value_too_low', 1)]);
    expect(book.snapshot(10).asks).toEqual([level(124, 8, 1)]);
  });

  it('D16: a flexible buy without R is checked on its fills at its market step', () => {
    // given: an empty book when the flexible buy arrives (no R), then a cheap ask
    const book = new OrderBook();
    givenOrders(book, [
      [marketBuy('b1', 1, { durationHours: 1, flexibleWindowHours: 2 }), 0],
      [sell('s1', 1, 124), 1],
    ]);
    // when: its window ends
    const events = book.advance(at(2));
    // then
    expect(events).toEqual([cancelled(at(2), 'b1', 'order_value_too_low', 1)]);
  });
});

// ---------------------------------------------------------------------------

describe('D17: wash trades (same account or same organisation)', () => {
  it('D17: an own-org ask reached before the buy is filled → self_trade_prevented, nothing fills (a foreign ask was ahead)', () => {
    // given: foreign 1 @100, own-org 1 @101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101, orgB('acct-s2')), 0],
    ]);
    // when: a 2-node buy of org-B
    const r = book.place(limitBuy('b1', 2, 101, orgB('acct-b1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 8, 1), level(101, 8, 1)], bestAsk: 100 }),
    );
  });

  it('D17: the same for a market buy (self_trade_prevented, not a part fill)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 2, orgB('acct-b1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 8, 1), level(101, 8, 1)], bestAsk: 100 }),
    );
  });

  it('D17: an own-org ask after the point where the buy is filled is fine', () => {
    // given: foreign 2 @100, then own-org 1 @100
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 2, 100), 0],
      [sell('s2', 1, 100, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 100, orgB('acct-b1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      events: [matched(at(1), 'b1', [fill('s1', 2, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        asks: [level(100, 8, 1)],
        bestAsk: 100,
        lastTrade: { price: 100, gpus: 16, at: at(1) },
      }),
    );
  });

  it('D17: an own-org ask that is not compatible (window too short) is skipped, not a self-trade', () => {
    // given: own-org 1 @90 with a 2 h window, foreign 1 @100
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 90, { ...orgB('acct-s1'), durationHours: 2 }), 0],
      [sell('s2', 1, 100), 0],
    ]);
    // when: a 4 h buy of org-B
    const r = book.place(limitBuy('b1', 1, 100, { ...orgB('acct-b1'), durationHours: 4 }), at(0));
    // then
    expect(r).toMatchObject({
      ok: true,
      state: 'filled',
      events: [matched(at(0), 'b1', [fill('s2', 1, 100, 0)], 0)],
    });
  });

  it('D17: the same account in a different organisation is also blocked', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { accountId: 'acct-X', orgId: 'org-1' }), 0]]);
    // when
    const r = book.place(limitBuy('b1', 1, 100, { accountId: 'acct-X', orgId: 'org-2' }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });

  it('D17: an arriving sell meeting an own-org bid is rejected', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, orgB('acct-b1')), 0]]);
    // when
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ bids: [level(100, 8, 1)], bestBid: 100 }));
  });

  it('D17: the sell is checked over its whole walk first: nothing fills even with a foreign bid ahead', () => {
    // given: foreign 1 @110, own-org 1 @105
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 110), 0],
      [limitBuy('b2', 1, 105, orgB('acct-b2')), 0],
    ]);
    // when: 2 nodes of org-B at 100
    const r = book.place(sell('s1', 2, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(
      snap({ bids: [level(110, 8, 1), level(105, 8, 1)], bestBid: 110 }),
    );
  });

  it('D17: a sell that is used up before it reaches an own-org bid trades normally', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 110), 0],
      [limitBuy('b2', 1, 105, orgB('acct-b2')), 0],
    ]);
    // when: 1 node only
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(1));
    // then
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b1', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(105, 8, 1)],
        bestBid: 105,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D17: an own-org AON bid the sell could not help fill is passed over: the sell trades on', () => {
    // given: own-org AON 3 @110, foreign 1 @100
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110, orgB('acct-b1')), 0],
      [limitBuy('b2', 1, 100), 0],
    ]);
    // when: 1 node of org-B at 100
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(1));
    // then: b1 keeps its place, b2 is filled
    expect(r).toMatchObject({
      ok: true,
      state: 'filled',
      events: [matched(at(1), 'b2', [fill('s1', 1, 100, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(110, 24, 1)],
        bestBid: 110,
        lastTrade: { price: 100, gpus: 8, at: at(1) },
      }),
    );
  });

  it('D17: an own-org AON bid the sell would complete (with resting asks) rejects the sell', () => {
    // given: own-org AON 3 @110 and a foreign 2-node ask @105, one node short of it
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 110, orgB('acct-b1')), 0],
      [sell('s0', 2, 105), 0],
    ]);
    // when: a 1-node org-B sell at 100, which would complete b1 were it another party's
    const r = book.place(sell('s1', 1, 100, orgB('acct-s1')), at(0));
    // then
    expectRejected(r, 'self_trade_prevented');
  });

  it('D17: the AON check counts only liquidity the buy may trade with: foreign 1 + own 1 for 2 nodes is no fill at all', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 100, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 100, orgB('acct-b1')), at(1));
    // then: never a part fill of s1
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 16, 2)], bestAsk: 100 }));
  });

  it('D17 / D13: a scheduled buy that meets its own ask at arrival is cancelled self_trade_prevented', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, orgB('acct-s1')), 0],
      [limitBuy('b1', 1, 100, { ...orgB('acct-b1'), startAt: at(1) }), 0],
    ]);
    // when
    const events = book.advance(at(1));
    // then
    expect(events).toEqual([cancelled(at(1), 'b1', 'self_trade_prevented', 1)]);
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });
  it('D17: an allowPartial buy reaching its own ask before it is filled is rejected too (no part fill)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 100, orgB('acct-s2')), 0],
    ]);
    // when
    const r = book.place(limitBuy('b1', 2, 100, { ...orgB('acct-b1'), allowPartial: true }), at(1));
    // then
    expect(r).toMatchObject({ ok: false, code: 'self_trade_prevented', events: [] });
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 16, 2)], bestAsk: 100 }));
  });
});

// ---------------------------------------------------------------------------

describe('cancel', () => {
  it('cancel: a resting order is removed and its nodes reported (reason user)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 3, 100), 0]]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 3, events: [cancelled(at(1), 'b1', 'user', 3)] });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('cancel: a resting sell', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 2, 100), 0]]);
    // when
    const r = book.cancel('s1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(1), 's1', 'user', 2)] });
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('cancel: a scheduled order is removed and never arrives', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100, { startAt: at(2) }), 0]]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 1, events: [cancelled(at(1), 'b1', 'user', 1)] });
    expect(book.advance(at(3))).toEqual([]);
    expect(book.snapshot(10)).toEqual(EMPTY);
  });

  it('cancel: an unknown order is not_found', () => {
    // given
    const book = new OrderBook();
    // when
    const r = book.cancel('nope', T0);
    // then
    expect(r).toEqual({ ok: false, code: 'not_found', events: [] });
  });

  it('cancel: an already cancelled order is not_found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    book.cancel('b1', at(1));
    // when
    const r = book.cancel('b1', at(2));
    // then
    expect(r).toEqual({ ok: false, code: 'not_found', events: [] });
  });

  it('cancel: a filled order is not_found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [limitBuy('b1', 1, 100), 0],
    ]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: false, code: 'not_found', events: [] });
  });

  it('cancel: a partially filled allowPartial buy cancels only the rest', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 3, 100, { allowPartial: true }), 0],
      [sell('s1', 1, 100), 1],
    ]);
    // when
    const r = book.cancel('b1', at(2));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(2), 'b1', 'user', 2)] });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 100, gpus: 8, at: at(1) } }));
  });

  it('cancel: a partially filled sell cancels only the rest', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 3, 100), 0],
      [limitBuy('b1', 1, 100), 1],
    ]);
    // when
    const r = book.cancel('s1', at(2));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(2), 's1', 'user', 2)] });
  });

  it('cancel / Time: timers fire first; an order that already expired is not_found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when
    const r = book.cancel('b1', at(25));
    // then
    expect(r).toEqual({
      ok: false,
      code: 'not_found',
      events: [cancelled(at(24), 'b1', 'expired', 1)],
    });
  });
  it('cancel: an unseen flexible buy (no ask at acceptance) can be cancelled', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[marketBuy('b1', 2, { flexibleWindowHours: 5 }), 0]]);
    // when
    const r = book.cancel('b1', at(1));
    // then
    expect(r).toEqual({ ok: true, nodes: 2, events: [cancelled(at(1), 'b1', 'user', 2)] });
    expect(book.openOrders()).toEqual([]);
    expect(book.advance(at(6))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------

describe('snapshot', () => {
  /** bids 100 (2 + 1 nodes), 98 (1); asks 101 (1), 105 (3 + 1). */
  function givenLevels(book: OrderBook): void {
    givenOrders(book, [
      [limitBuy('b1', 2, 100), 0],
      [limitBuy('b2', 1, 100), 0],
      [limitBuy('b3', 1, 98), 0],
      [sell('s1', 1, 101), 0],
      [sell('s2', 3, 105), 0],
      [sell('s3', 1, 105), 0],
    ]);
  }

  it('snapshot: levels with GPUs and order counts, best bid/ask, spread, mid 100.5 → 100 (half-even)', () => {
    // given
    const book = new OrderBook();
    givenLevels(book);
    // when
    const s = book.snapshot(10);
    // then
    expect(s).toEqual({
      bids: [level(100, 24, 2), level(98, 8, 1)],
      asks: [level(101, 8, 1), level(105, 32, 2)],
      bestBid: 100,
      bestAsk: 101,
      spread: 1,
      midPrice: 100,
      lastTrade: null,
    });
  });

  it('snapshot: mid 101.5 → 102 (half-even)', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 101), 0],
      [sell('s1', 1, 102), 0],
    ]);
    // when
    const s = book.snapshot(10);
    // then
    expect(s).toMatchObject({ bestBid: 101, bestAsk: 102, spread: 1, midPrice: 102 });
  });

  it('snapshot: depth limits the levels per side, not the best prices', () => {
    // given
    const book = new OrderBook();
    givenLevels(book);
    // when
    const s = book.snapshot(1);
    // then
    expect(s).toEqual({
      bids: [level(100, 24, 2)],
      asks: [level(101, 8, 1)],
      bestBid: 100,
      bestAsk: 101,
      spread: 1,
      midPrice: 100,
      lastTrade: null,
    });
  });

  it('snapshot: one-sided book has no spread or mid', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    // when
    const s = book.snapshot(10);
    // then
    expect(s).toEqual(snap({ bids: [level(100, 8, 1)], bestBid: 100 }));
  });

  it('snapshot: lastTrade is the price and GPUs of the last fill of the last step, and its time', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 2, 101), 0],
      [limitBuy('b1', 3, 101), 1],
    ]);
    // when
    const s = book.snapshot(10);
    // then
    expect(s.lastTrade).toEqual({ price: 101, gpus: 16, at: at(1) });
    expect(book.lastTrade()).toEqual({ price: 101, gpus: 16, at: at(1) });
  });

  it('snapshot: an empty book', () => {
    expect(new OrderBook().snapshot(10)).toEqual(EMPTY);
  });
});

// ---------------------------------------------------------------------------

describe('estimate', () => {
  it('estimate: fills per level, GPU-weighted estimatedPrice, worst price, total, exact compute cost', () => {
    // given: 100 ×1, 100 ×2, 105 ×2, 110 ×1
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 2, 100), 0],
      [sell('s3', 2, 105), 0],
      [sell('s4', 1, 110), 0],
    ]);
    // when: 4 nodes for 3 h
    const e = book.estimate({ nodes: 4, durationHours: 3 }, at(0));
    // then: 24 GPUs at 100, 8 at 105; (2400 + 840) / 32 = 101.25 → 101;
    // cost (100 × 24 + 105 × 8) × 3 = 9720
    expect(e).toEqual({
      fills: [
        { price: 100, gpus: 24 },
        { price: 105, gpus: 8 },
      ],
      estimatedPrice: 101,
      bestAsk: 100,
      worstFillPrice: 105,
      totalAvailable: 48,
      sufficientLiquidity: true,
      missingGpus: 0,
      computeCostCents: 9720,
    });
  });

  it.each([
    [100, 101, 100],
    [101, 102, 102],
  ])('estimate: estimatedPrice is rounded half-even: asks %i and %i → %i', (p1, p2, expected) => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, p1), 0],
      [sell('s2', 1, p2), 0],
    ]);
    // when
    const e = book.estimate({ nodes: 2, durationHours: 1 }, at(0));
    // then
    expect(e).toMatchObject({ estimatedPrice: expected, computeCostCents: (p1 + p2) * 8 });
  });

  it('estimate: insufficient liquidity reports missingGpus and prices what it found', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 105), 0],
    ]);
    // when
    const e = book.estimate({ nodes: 4, durationHours: 2 }, at(0));
    // then: 102.5 → 102; cost (800 + 840) × 2
    expect(e).toEqual({
      fills: [
        { price: 100, gpus: 8 },
        { price: 105, gpus: 8 },
      ],
      estimatedPrice: 102,
      bestAsk: 100,
      worstFillPrice: 105,
      totalAvailable: 16,
      sufficientLiquidity: false,
      missingGpus: 16,
      computeCostCents: 3280,
    });
  });

  it('estimate: an empty book', () => {
    // given
    const book = new OrderBook();
    // when
    const e = book.estimate({ nodes: 1, durationHours: 1 }, T0);
    // then
    expect(e).toEqual({
      fills: [],
      estimatedPrice: null,
      bestAsk: null,
      worstFillPrice: null,
      totalAvailable: 0,
      sufficientLiquidity: false,
      missingGpus: 8,
      computeCostCents: 0,
    });
  });

  it("estimate: skips the party's own asks (same org, or same account)", () => {
    // given: org-1 asks at 100 (acct-X) and 104 (acct-Y); a foreign one at 103
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, { accountId: 'acct-X', orgId: 'org-1' }), 0],
      [sell('s2', 1, 103), 0],
      [sell('s3', 1, 104, { accountId: 'acct-Y', orgId: 'org-1' }), 0],
    ]);
    // when / then: by organisation
    expect(
      book.estimate({ nodes: 1, durationHours: 4, accountId: 'acct-Z', orgId: 'org-1' }, at(0)),
    ).toMatchObject({
      fills: [{ price: 103, gpus: 8 }],
      estimatedPrice: 103,
      worstFillPrice: 103,
      totalAvailable: 8,
      sufficientLiquidity: true,
      missingGpus: 0,
      computeCostCents: 103 * 8 * 4,
    });
    // by account alone
    expect(
      book.estimate({ nodes: 2, durationHours: 4, accountId: 'acct-X', orgId: 'org-9' }, at(0)),
    ).toMatchObject({
      fills: [
        { price: 103, gpus: 8 },
        { price: 104, gpus: 8 },
      ],
      totalAvailable: 16,
    });
  });

  it('estimate: skips asks whose window does not fit at `now`', () => {
    // given: 1 @100 with a 5 h window, 1 @105 with 48 h
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, { durationHours: 5 }), 0],
      [sell('s2', 1, 105), 0],
    ]);
    // when: a 4 h estimate at T0 + 2 h (s1 has 3 h left)
    const e = book.estimate({ nodes: 1, durationHours: 4 }, at(2));
    // then
    expect(e).toMatchObject({
      fills: [{ price: 105, gpus: 8 }],
      estimatedPrice: 105,
      worstFillPrice: 105,
      totalAvailable: 8,
      sufficientLiquidity: true,
      computeCostCents: 105 * 8 * 4,
    });
  });

  it('estimate: at T0 + 1 h the same ask still fits', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100, { durationHours: 5 }), 0],
      [sell('s2', 1, 105), 0],
    ]);
    // when
    const e = book.estimate({ nodes: 1, durationHours: 4 }, at(1));
    // then
    expect(e).toMatchObject({ fills: [{ price: 100, gpus: 8 }], totalAvailable: 16 });
  });

  it('estimate: is pure: it does not advance the clock or fire timers', () => {
    // given: a sell expiring at T0 + 5 h
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 100, { durationHours: 5 }), 0]]);
    // when
    book.estimate({ nodes: 1, durationHours: 1 }, at(10));
    // then
    expect(book.clock).toBe(at(0));
    expect(book.snapshot(10)).toEqual(snap({ asks: [level(100, 8, 1)], bestAsk: 100 }));
  });

  it('estimate / D15: skips asks outside the collar', () => {
    // given: an ask at 200 from before any reference, a trade at 100, an ask at 120
    const book = new OrderBook();
    givenOrders(book, [[sell('s1', 1, 200), 0]]);
    givenTradeAt(book, 100);
    givenOrders(book, [[sell('s2', 1, 120), 0]]);
    // when
    const e = book.estimate({ nodes: 2, durationHours: 1 }, at(0));
    // then
    expect(e).toEqual({
      fills: [{ price: 120, gpus: 8 }],
      estimatedPrice: 120,
      bestAsk: 120,
      worstFillPrice: 120,
      totalAvailable: 8,
      sufficientLiquidity: false,
      missingGpus: 8,
      computeCostCents: 960,
    });
  });
});

// ---------------------------------------------------------------------------

describe('restore', () => {
  /**
   * A book with a last trade, a partly filled ask, resting bids of several
   * kinds, a scheduled bid and a flexible bid resting at R.
   */
  function givenRichBook(): OrderBook {
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 2, 100), 0],
      [sell('s2', 1, 105), 0],
      [limitBuy('b1', 1, 90), 0],
      [limitBuy('t1', 1, 100), 0], // fills 1 of s1: last trade 100
      [limitBuy('b3', 3, 95, { allowPartial: true }), 0],
      [limitBuy('b4', 1, 96, { startAt: at(2) }), 0],
      [marketBuy('b5', 2, { flexibleWindowHours: 5 }), 0], // R = (100 + 105) / 2 = 102.5 → 102
    ]);
    return book;
  }

  it('restore: yields the same snapshot and open orders', () => {
    // given
    const book = givenRichBook();
    // when
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    // then
    const expected = {
      bids: [level(102, 16, 1), level(95, 24, 1), level(90, 8, 1)],
      asks: [level(100, 8, 1), level(105, 8, 1)],
      bestBid: 102,
      bestAsk: 100,
      spread: -2,
      midPrice: 101,
      lastTrade: { price: 100, gpus: 8, at: at(0) },
    };
    expect(book.snapshot(10)).toEqual(expected);
    expect(restored.snapshot(10)).toEqual(expected);
    expect(restored.clock).toBe(at(0));
    expect(restored.openOrders()).toEqual(book.openOrders());
    expect(restored.lastTrade()).toEqual(book.lastTrade());
  });

  it('restore: the restored book behaves the same on the next order', () => {
    // given
    const book = givenRichBook();
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    // when: 1 node at 100: b5 (AON 2 at 102) fills from s1's last node + it
    const order = sell('s4', 1, 100);
    const r1 = book.place(order, at(1));
    const r2 = restored.place(order, at(1));
    // then
    const expected = {
      ok: true,
      state: 'filled',
      filledNodes: 1,
      events: [matched(at(1), 'b5', [fill('s1', 1, 100, 0), fill('s4', 1, 100, 0)], 0)],
    };
    expect(r1).toEqual(expected);
    expect(r2).toEqual(expected);
    expect(restored.snapshot(10)).toEqual(book.snapshot(10));
  });

  it('restore: timers (arrival, expiries in acceptance order) carry over', () => {
    // given
    const book = givenRichBook();
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    // when
    const e1 = book.advance(at(30));
    const e2 = restored.advance(at(30));
    // then: b4 arrives at 2 h and rests (105 > 96); b5's window ends at 5 h: market
    // step takes s1 1 @100 and s2 1 @105; then at 24 h b1, b3, b4 expire
    const expected = [
      rested(at(2), 'b4', 96, 1),
      matched(at(5), 'b5', [fill('s1', 1, 100, 0), fill('s2', 1, 105, 0)], 0),
      cancelled(at(24), 'b1', 'expired', 1),
      cancelled(at(24), 'b3', 'expired', 3),
      cancelled(at(24), 'b4', 'expired', 1),
    ];
    expect(e1).toEqual(expected);
    expect(e2).toEqual(expected);
  });
  it('restore / openOrders: lists resting orders in priority order (bids then asks) with their state, plus scheduled and unseen ones', () => {
    // given
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [limitBuy('b2', 2, 101), 0],
      [sell('s1', 1, 120, orgB('acct-s1')), 0],
      [limitBuy('b3', 1, 100, { startAt: at(2) }), 0],
      // b4's estimate skips its own org's asks: none left, so it waits unseen
      [marketBuy('b4', 1, { flexibleWindowHours: 3, ...orgB('acct-b4') }), 0],
    ]);
    givenOrders(book, [[sell('s2', 2, 110, orgB('acct-s2')), 1]]);
    // when
    const open = book.openOrders();
    // then
    const brief = open.map((o) => ({
      id: o.input.id,
      state: o.state,
      remaining: o.remaining,
      acceptedAt: o.acceptedAt,
      startAt: o.startAt,
      expiresAt: o.expiresAt,
      price: o.price,
    }));
    expect(brief.filter((o) => o.state === 'resting')).toEqual([
      {
        id: 'b2',
        state: 'resting',
        remaining: 2,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(24),
        price: 101,
      },
      {
        id: 'b1',
        state: 'resting',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(24),
        price: 100,
      },
      {
        id: 's2',
        state: 'resting',
        remaining: 2,
        acceptedAt: at(1),
        startAt: at(1),
        expiresAt: at(48) + 1, // the first instant no 1 h lease fits (D12)
        price: 110,
      },
      {
        id: 's1',
        state: 'resting',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(47) + 1,
        price: 120,
      },
    ]);
    expect(
      brief.filter((o) => o.state !== 'resting').sort((a, b) => a.id.localeCompare(b.id)),
    ).toEqual([
      {
        id: 'b3',
        state: 'scheduled',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(2),
        expiresAt: at(24),
        price: 100,
      },
      {
        id: 'b4',
        state: 'unseen',
        remaining: 1,
        acceptedAt: at(0),
        startAt: at(0),
        expiresAt: at(3),
        price: null,
      },
    ]);
  });
  it('restore: acceptance order continues after the restored orders (expiry ties)', () => {
    // given: a restored book and a new 1-node bid accepted at the same instant as b1, b3, b4
    const book = givenRichBook();
    const restored = OrderBook.restore(book.openOrders(), book.lastTrade(), book.clock);
    place(restored, limitBuy('b9', 1, 90), at(0));
    // when
    const events = restored.advance(at(30));
    // then: b9 expires last among the 24 h expiries
    expect(events).toEqual([
      rested(at(2), 'b4', 96, 1),
      matched(at(5), 'b5', [fill('s1', 1, 100, 0), fill('s2', 1, 105, 0)], 0),
      cancelled(at(24), 'b1', 'expired', 1),
      cancelled(at(24), 'b3', 'expired', 3),
      cancelled(at(24), 'b4', 'expired', 1),
      cancelled(at(24), 'b9', 'expired', 1),
    ]);
  });

  it('D12: expiries still fire on time after the timers of thousands of done orders are dropped', () => {
    // given: one resting bid, then 3,000 sells each bought at once: their
    // window-end timers outlive them and make the book clean up its timers
    const book = new OrderBook();
    place(book, limitBuy('keep', 1, 90), at(0));
    for (let i = 0; i < 3000; i++) {
      place(book, sell(`s${i}`, 1, 100), at(1));
      place(book, limitBuy(`b${i}`, 1, 100), at(1));
    }
    // when: time passes past the bid's expiry and the sells' windows
    const events = book.advance(at(100));
    // then: only the live order's expiry fires, at its time
    expect(events).toEqual([cancelled(at(24), 'keep', 'expired', 1)]);
    expect(book.openOrders()).toEqual([]);
  });

  it('restore: queues each level by seq, whatever the order of the list (a scheduled order queues from its start)', () => {
    // given: 'early' accepted first but scheduled, 'late' accepted later and resting at once
    const book = new OrderBook();
    givenOrders(book, [
      [sell('early', 1, 100, { startAt: at(1) }), 0],
      [sell('late', 1, 100), 0.5],
    ]);
    book.advance(at(2));
    const open = book.openOrders();
    expect(open.map((o) => [o.input.id, o.acceptSeq, o.seq])).toEqual([
      ['late', 2, 1],
      ['early', 1, 2],
    ]);
    // when: rebuilt from the list in acceptance order (as a database might return it)
    const restored = OrderBook.restore([...open].reverse(), book.lastTrade(), book.clock);
    const r = restored.place(limitBuy('b1', 1, 100), at(2));
    // then: 'late' is still first in the queue
    expect(r).toMatchObject({ events: [matched(at(2), 'b1', [fill('late', 1, 100, 0)], 0)] });
    expect(restored.openOrders()).toEqual(book.openOrders().filter((o) => o.input.id === 'early'));
  });

  it('restore: refuses a resting order without seq (its place in the queue would be a guess)', () => {
    const book = new OrderBook();
    givenOrders(book, [[limitBuy('b1', 1, 100), 0]]);
    const [open] = book.openOrders();
    if (open === undefined) throw new Error('no open order');
    expect(() => OrderBook.restore([{ ...open, seq: null }], null, book.clock)).toThrow(/seq/);
  });

  it('restore: acceptance and entry numbers never go back, whatever counters say', () => {
    // given: two resting orders, restored with counters too low
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b1', 1, 100), 0],
      [limitBuy('b2', 1, 100), 0],
    ]);
    const restored = OrderBook.restore(book.openOrders(), null, book.clock, {
      accepted: 0,
      entered: 0,
    });
    // when
    place(restored, limitBuy('b3', 1, 100), at(0));
    // then: b3 comes after both, in acceptance and in the queue
    expect(restored.openOrders().map((o) => [o.input.id, o.acceptSeq, o.seq])).toEqual([
      ['b1', 1, 1],
      ['b2', 2, 2],
      ['b3', 3, 3],
    ]);
  });
});
