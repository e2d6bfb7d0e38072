// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): all-or-nothing sells met by an arriving buy: reachability and the
// plan (D27, D9, "Choosing the fills"). Every expected value is worked out by
// hand from the doc in the test. given: orders placed into a fresh book; when:
// one command; then: its result, its events and the snapshot afterwards.
// Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  aonSell,
  at,
  fill,
  givenOrders,
  level,
  limitBuy,
  marketBuy,
  matched,
  orgB,
  rested,
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';

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
