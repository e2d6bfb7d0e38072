// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): all-or-nothing buys and allowPartial (spec rule 3, D9). Every
// expected value is worked out by hand from the doc in the test. given: orders
// placed into a fresh book; when: one command; then: its result, its events and
// the snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  at,
  fill,
  givenOrders,
  level,
  limitBuy,
  matched,
  rested,
  sell,
  snap,
} from './testing/given.js';

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
