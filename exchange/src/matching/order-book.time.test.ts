// Given/when/then tests of the matching engine (docs/matching.md, the exact
// rules): expiry (D12) and orders that start in the future (D13). Every
// expected value is worked out by hand from the doc in the test. given: orders
// placed into a fresh book; when: one command; then: its result, its events and
// the snapshot afterwards. Builders: testing/given.ts.

import { describe, expect, it } from 'vitest';

import { OrderBook } from './order-book.js';
import {
  EMPTY,
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
  snap,
} from './testing/given.js';
import { expectRejected } from './testing/then.js';

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
