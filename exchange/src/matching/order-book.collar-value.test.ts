// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): the price collar (D15) and the minimum order value (D16). Every
// expected value is worked out by hand from the doc in the test. given: orders
// placed into a fresh book; when: one command; then: its result, its events and
// the snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  T0,
  at,
  cancelled,
  fill,
  givenOrders,
  givenTradeAt,
  level,
  limitBuy,
  marketBuy,
  matched,
  rested,
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';
import type { OrderInput } from './types.js';

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

  it('D15: a refusal names the band it missed and its reference (the exact mid, doubled)', () => {
    const book = new OrderBook();
    givenOrders(book, [
      [limitBuy('b0', 1, 100), 0],
      [sell('s0', 1, 101), 0],
    ]);
    const r = book.place(sell('x', 1, 151), at(1));
    expect(r).toMatchObject({
      ok: false,
      code: 'price_out_of_collar',
      collar: { referenceTwiceCents: 201, reference: 'mid_price', lo: 51, hi: 150 },
    });
    const traded = new OrderBook();
    givenTradeAt(traded, 101);
    expect(traded.place(limitBuy('y', 1, 50), at(1))).toMatchObject({
      collar: { referenceTwiceCents: 202, reference: 'last_trade', lo: 51, hi: 151 },
    });
  });

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
