// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): the arrival of a sell over all-or-nothing bids and asks, and all-or-
// nothing sells over time (D27, D9). Every expected value is worked out by hand
// from the doc in the test. given: orders placed into a fresh book; when: one
// command; then: its result, its events and the snapshot afterwards. Builders:
// testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  aonSell,
  at,
  cancelled,
  fill,
  givenOrders,
  level,
  limitBuy,
  matched,
  orgB,
  rested,
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';

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

// ---------------------------------------------------------------------------

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
