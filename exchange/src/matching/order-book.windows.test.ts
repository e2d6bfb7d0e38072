// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): sell windows: a buy must fit what is left of the window (D6). Every
// expected value is worked out by hand from the doc in the test. given: orders
// placed into a fresh book; when: one command; then: its result, its events and
// the snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
  at,
  fill,
  givenOrders,
  level,
  limitBuy,
  matched,
  place,
  rested,
  sell,
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';

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
