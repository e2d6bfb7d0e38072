// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): matching at the seller's ask (spec rule 1, D7), price-time priority
// (spec rule 2, D8), market buys (D10) and matching steps (D11). Every expected
// value is worked out by hand from the doc in the test. given: orders placed
// into a fresh book; when: one command; then: its result, its events and the
// snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  T0,
  at,
  cancelled,
  fill,
  givenOrders,
  level,
  limitBuy,
  marketBuy,
  matched,
  rested,
  sell,
  snap,
} from './testing/given.js';

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
