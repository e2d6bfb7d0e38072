// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): flexible timing (D14). Every expected value is worked out by hand
// from the doc in the test. given: orders placed into a fresh book; when: one
// command; then: its result, its events and the snapshot afterwards. Builders:
// testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  at,
  cancelled,
  fill,
  givenOrders,
  givenTradeAt,
  level,
  limitBuy,
  marketBuy,
  matched,
  orgB,
  place,
  rested,
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';

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

  it("D14: without a limit price R = the estimate's estimatedPrice, half-even (100.5 → 100); the market step's average, rounded the same way, is R: it fills at once", () => {
    // given: 1 node at 100, 1 at 101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 101), 0],
    ]);
    // when: a flexible 2-node buy without a limit
    const r = book.place(marketBuy('b1', 2, { flexibleWindowHours: 3 }), at(0));
    // then: its market step averages 100.5 → 100 ≤ R = 100 (the step, not each level)
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      referencePrice: 100,
      events: [matched(at(0), 'b1', [fill('s1', 1, 100, 0), fill('s2', 1, 101, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 101, gpus: 8, at: at(0) } }));
  });

  it('D14: a 16-GPU flexible buy against 8 GPUs @ $2.00 and 8 @ $2.40 (estimate $2.20 = R) fills at creation', () => {
    // given: 1 node at 200, 1 at 240
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 200), 0],
      [sell('s2', 1, 240), 0],
    ]);
    // when: a flexible 2-node (16-GPU) buy without a limit
    const r = book.place(marketBuy('b1', 2, { flexibleWindowHours: 3 }), at(0));
    // then: R = 220; the market step averages (200 + 240) / 2 = 220 ≤ R, although the
    // level at 240 alone is above R
    expect(r).toEqual({
      ok: true,
      state: 'filled',
      filledNodes: 2,
      referencePrice: 220,
      events: [matched(at(0), 'b1', [fill('s1', 1, 200, 0), fill('s2', 1, 240, 0)], 0)],
    });
    expect(book.snapshot(10)).toEqual(snap({ lastTrade: { price: 240, gpus: 8, at: at(0) } }));
  });

  it('D14: arriving at its startAt, when the market step averages above R (the book moved), it rests at R as a limit buy', () => {
    // given: R = 220 at acceptance from 200 and 240; then the ask at 200 is withdrawn
    // and one at 250 comes
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 200), 0],
      [sell('s2', 1, 240), 0],
    ]);
    const r0 = place(book, marketBuy('b1', 2, { startAt: at(2), flexibleWindowHours: 3 }), at(0));
    expect(r0).toMatchObject({ state: 'scheduled', referencePrice: 220, events: [] });
    book.cancel('s1', at(1));
    givenOrders(book, [[sell('s3', 1, 250), 1]]);
    // when
    const events = book.advance(at(2));
    // then: the market step would average (240 + 250) / 2 = 245 > 220: it rests at 220
    expect(events).toEqual([rested(at(2), 'b1', 220, 2)]);
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(220, 16, 1)],
        asks: [level(240, 8, 1), level(250, 8, 1)],
        bestBid: 220,
        bestAsk: 240,
        spread: 20,
        midPrice: 230,
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
    // when: it starts later, so only R is worked out now
    const r = book.place(
      marketBuy('b1', 2, { ...orgB('acct-b1'), startAt: at(1), flexibleWindowHours: 3 }),
      at(0),
    );
    // then
    expect(r).toEqual({
      ok: true,
      state: 'scheduled',
      filledNodes: 0,
      referencePrice: 103,
      events: [],
    });
  });

  it('D14 / D17: a market step on arrival that would take an own-party ask rejects the buy self_trade_prevented', () => {
    // given: 100, own 104, 106 → R = 103; the market step takes 100 and the own
    // 104 (average 102 ≤ 103)
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 104, orgB('acct-s2')), 0],
      [sell('s3', 1, 106), 0],
    ]);
    // when
    const r = book.place(marketBuy('b1', 2, { ...orgB('acct-b1'), flexibleWindowHours: 3 }), at(0));
    // then: nothing fills, nothing rests
    expectRejected(r, 'self_trade_prevented');
    expect(book.snapshot(10)).toEqual(
      snap({ asks: [level(100, 8, 1), level(104, 8, 1), level(106, 8, 1)], bestAsk: 100 }),
    );
  });

  it('D14 / D17: an own ask in a market step that is not taken (its average is above R) does not matter: the buy rests at R', () => {
    // given: 100 and an own ask at 200: R = 100 from 1 of 2 nodes
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 200, orgB('acct-s2')), 0],
    ]);
    // when: the market step would take 100 + own 200, average 150 > R
    const r = book.place(marketBuy('b1', 2, { ...orgB('acct-b1'), flexibleWindowHours: 3 }), at(0));
    // then: a limit buy at 100 (all-or-nothing, 1 of 2 nodes at ≤ 100): it rests
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 0,
      referencePrice: 100,
      events: [rested(at(0), 'b1', 100, 2)],
    });
  });

  it('D14: an allowPartial market step on arrival takes what it can at an average ≤ R; the rest waits at R until the window end', () => {
    // given: 1 node at 100, 1 at 110
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [sell('s2', 1, 110), 0],
    ]);
    // when: a flexible allowPartial 3-node buy: R = 105
    const r = book.place(marketBuy('b1', 3, { flexibleWindowHours: 2, allowPartial: true }), at(0));
    // then: the step takes both (average 105 ≤ R), 1 node rests at 105
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 2,
      referencePrice: 105,
      events: [
        matched(at(0), 'b1', [fill('s1', 1, 100, 0), fill('s2', 1, 110, 0)], 1),
        rested(at(0), 'b1', 105, 1),
      ],
    });
    expect(book.snapshot(10)).toEqual(
      snap({
        bids: [level(105, 8, 1)],
        bestBid: 105,
        lastTrade: { price: 110, gpus: 8, at: at(0) },
      }),
    );
    // and at the window end the rest goes to market
    expect(book.advance(at(2))).toEqual([cancelled(at(2), 'b1', 'insufficient_liquidity', 1)]);
  });

  it('D14 / D15: what an allowPartial market step leaves takes an ask under the collar at ≤ R in a second step', () => {
    // given: an ask at 100 whose 2 h window the 4 h trade at 300 could not use,
    // so the collar is [150, 450] and the ask at 100 is under it; one at 300
    const book = new OrderBook();
    givenOrders(book, [[sell('cheap', 1, 100, { durationHours: 2 }), 0]]);
    givenTradeAt(book, 300);
    givenOrders(book, [[sell('s2', 1, 300), 0]]);
    // when: a flexible allowPartial 3-node 1 h buy: R = 300 (the estimate keeps to the collar)
    const r = book.place(
      marketBuy('b1', 3, { durationHours: 1, flexibleWindowHours: 2, allowPartial: true }),
      at(0),
    );
    // then: the market step takes s2; the rest arrives as a limit buy at 300 and
    // takes the ask at 100; 1 node rests at R
    expect(r).toEqual({
      ok: true,
      state: 'resting',
      filledNodes: 2,
      referencePrice: 300,
      events: [
        matched(at(0), 'b1', [fill('s2', 1, 300, 0)], 2),
        matched(at(0), 'b1', [fill('cheap', 1, 100, 0)], 1),
        rested(at(0), 'b1', 300, 1),
      ],
    });
  });

  it('D14 / D17: when the rest after an allowPartial market step would take an own ask, the rest is cancelled self_trade_prevented and the step stands', () => {
    // given: as above, the ask under the collar being the buyer's organisation's
    const book = new OrderBook();
    givenOrders(book, [[sell('cheap', 1, 100, { durationHours: 2, ...orgB('acct-c') }), 0]]);
    givenTradeAt(book, 300);
    givenOrders(book, [[sell('s2', 1, 300), 0]]);
    // when
    const r = book.place(
      marketBuy('b1', 3, {
        ...orgB('acct-b1'),
        durationHours: 1,
        flexibleWindowHours: 2,
        allowPartial: true,
      }),
      at(0),
    );
    // then
    expect(r).toEqual({
      ok: true,
      state: 'cancelled',
      filledNodes: 1,
      referencePrice: 300,
      events: [
        matched(at(0), 'b1', [fill('s2', 1, 300, 0)], 2),
        cancelled(at(0), 'b1', 'self_trade_prevented', 2),
      ],
    });
    expect(book.openOrders().map((o) => o.input.id)).toEqual(['cheap']);
  });

  it('D14: the flexible buy fills when an ask ≤ R arrives', () => {
    // given: the flexible buy resting at R = 100 (1 of its 2 nodes on offer), then an ask at 101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [marketBuy('b1', 2, { flexibleWindowHours: 3 }), 0],
      [sell('s2', 1, 101), 0],
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
    // given: the flexible buy resting at R = 100, w = 2 h, then an ask at 101
    const book = new OrderBook();
    givenOrders(book, [
      [sell('s1', 1, 100), 0],
      [marketBuy('b1', 2, { flexibleWindowHours: 2 }), 0],
      [sell('s2', 1, 101), 0],
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
    // (on acceptance its market step takes s1 at once, average 100 ≤ R; the rest waits at R)
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
