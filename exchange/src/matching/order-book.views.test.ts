// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): the views: snapshot and estimate (docs/matching.md "Views"). Every
// expected value is worked out by hand from the doc in the test. given: orders
// placed into a fresh book; when: one command; then: its result, its events and
// the snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  T0,
  at,
  givenOrders,
  givenTradeAt,
  level,
  limitBuy,
  sell,
  snap,
} from './testing/given.js';

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
